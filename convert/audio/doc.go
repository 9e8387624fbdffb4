// Package audio is the audio family: WAV, FLAC, MP3 and Ogg Vorbis in, WAV and FLAC out,
// decoded and encoded as a stream of PCM blocks. WAV and FLAC round-trip exactly; the lossy
// inputs decode to 16-bit PCM.
//
// Modules: mewkiz/flac (FLAC reading and writing), hajimehoshi/go-mp3, jfreymuth/oggvorbis;
// WAV is the package's own.
//
// Limits: AudioMaxChannels, AudioMaxRate and AudioMaxSamples bound what a header may announce,
// checked before decoding; streams stop soon after their context ends.
package audio
