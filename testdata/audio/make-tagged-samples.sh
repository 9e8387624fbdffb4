#!/bin/sh
# Writes the audio samples whose tags or float samples the audio converters cannot keep
# (issue 23), with ffmpeg (which shares no code with convsvc's decoders): 0.3 s of a 440 Hz
# sine, stereo, 44.1 kHz, tagged title and artist. Run from the module root:
#   sh testdata/audio/make-tagged-samples.sh
set -eu
cd testdata/audio
src="sine=frequency=440:duration=0.3:sample_rate=44100"
tags="-metadata title=convsvc-test -metadata artist=Tester -bitexact -fflags +bitexact"
ffmpeg -v error -f lavfi -i "$src" -ac 2 $tags -c:a pcm_f32le -y sample-float-tagged.wav
ffmpeg -v error -f lavfi -i "$src" -ac 2 $tags -c:a flac -y sample-tagged.flac
ffmpeg -v error -f lavfi -i "$src" -ac 2 $tags -c:a libmp3lame -y sample-tagged.mp3
ffmpeg -v error -f lavfi -i "$src" -ac 2 $tags -c:a libvorbis -y sample-tagged.ogg
