package convert

// registerAudioFormats adds the audio formats and their converters.
func registerAudioFormats(c *Catalog) {
	c.AddFormat(Format{ID: "wav", Name: "WAV audio", Category: CategoryAudio, Extensions: []string{"wav"}, MIME: "audio/wav"})
	c.AddFormat(Format{ID: "flac", Name: "FLAC audio", Category: CategoryAudio, Extensions: []string{"flac"}, MIME: "audio/flac"})
	c.AddFormat(Format{ID: "mp3", Name: "MP3 audio", Category: CategoryAudio, Extensions: []string{"mp3"}, MIME: "audio/mpeg"})
}
