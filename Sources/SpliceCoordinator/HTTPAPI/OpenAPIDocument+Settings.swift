extension OpenAPIDocument {
    /// The settings' schemas, as docs/schema/transcode-request.json has them (``OpenAPIDocument/text``'s end).
    static let settingsSchemas = #"""
   "MediaTime": {
    "description": "An exact time: value/timescale seconds (value a 64-bit integer, timescale a positive 32-bit integer). 2.5 s is {\"value\": 5, \"timescale\": 2}.",
    "type": "object",
    "required": [
     "value",
     "timescale"
    ],
    "additionalProperties": false,
    "properties": {
     "value": {
      "description": "Units of 1/timescale second.",
      "type": "integer",
      "minimum": -9223372036854775808,
      "maximum": 9223372036854775807
     },
     "timescale": {
      "description": "Units per second.",
      "type": "integer",
      "minimum": 1,
      "maximum": 2147483647
     }
    }
   },
   "MediaTimeRange": {
    "description": "[start, start + duration).",
    "type": "object",
    "required": [
     "start",
     "duration"
    ],
    "additionalProperties": false,
    "properties": {
     "start": {
      "description": "The first instant, in source time.",
      "$ref": "#/components/schemas/MediaTime"
     },
     "duration": {
      "description": "How long; longer than zero.",
      "$ref": "#/components/schemas/MediaTime"
     }
    }
   },
   "Rational": {
    "description": "An exact ratio of two 32-bit integers: 30000/1001 is {\"numerator\": 30000, \"denominator\": 1001}.",
    "type": "object",
    "required": [
     "numerator",
     "denominator"
    ],
    "additionalProperties": false,
    "properties": {
     "numerator": {
      "type": "integer",
      "minimum": 1,
      "maximum": 2147483647
     },
     "denominator": {
      "type": "integer",
      "minimum": 1,
      "maximum": 2147483647
     }
    }
   },
   "VideoSettings": {
    "description": "Fields left out take defaults from the source when the job is planned: size from the upright source, constant quality at the encoder's usual level (x264 CRF 23, x265 28, VP9 31, SVT-AV1 35, libaom 32) unless quality or bitrate is given, a keyframe at most every 10 s of frames, 4:2:0 at the source's bit depth, the source's colour description and HDR metadata kept.",
    "type": "object",
    "required": [
     "codec"
    ],
    "additionalProperties": false,
    "properties": {
     "codec": {
      "description": "The video codec. mp4: h264, hevc, vp9, av1; mov: h264, hevc, prores; mkv: any; webm: vp9, av1. CLI: --video-codec.",
      "enum": [
       "h264",
       "hevc",
       "vp9",
       "av1",
       "prores"
      ]
     },
     "width": {
      "description": "Output width in pixels, 1…16384; alone, the height keeps the aspect. CLI: --width.",
      "type": "integer",
      "minimum": 1,
      "maximum": 16384
     },
     "height": {
      "description": "Output height in pixels, 1…16384; with width the picture is fitted inside the box and padded. CLI: --height.",
      "type": "integer",
      "minimum": 1,
      "maximum": 16384
     },
     "quality": {
      "description": "Constant quality (CRF): 0…51 for h264/hevc, 0…63 for vp9/av1, lower is better; not with bitrate, not for prores. CLI: --crf.",
      "type": "integer",
      "minimum": 0,
      "maximum": 63
     },
     "bitrate": {
      "description": "Average bit rate in bits per second, 1000…2,000,000,000, instead of constant quality. CLI: --video-bitrate.",
      "type": "integer",
      "minimum": 1000,
      "maximum": 2000000000
     },
     "maxBitrate": {
      "description": "Peak bit rate (VBV/HRD max rate) in bits per second, at least 1000 and at least bitrate; needs bufferSize. CLI: --max-bitrate.",
      "type": "integer",
      "minimum": 1000
     },
     "bufferSize": {
      "description": "Rate-control buffer size in bits, at least 1000. CLI: --buffer-size.",
      "type": "integer",
      "minimum": 1000
     },
     "profile": {
      "description": "Codec profile. h264: baseline, main, high, high10, high422, high444; hevc: main, main10, main422-10, main444-8, main444-10; vp9: 0…3; av1: main, high, professional; prores: proxy, lt, standard, hq, 4444, 4444xq. CLI: --profile.",
      "type": "string"
     },
     "level": {
      "description": "Codec level for h264/hevc, like \"4.1\". CLI: --level.",
      "type": "string",
      "pattern": "^[1-6](\\.[0-3])?$"
     },
     "encoder": {
      "description": "The FFmpeg encoder that makes the codec: av1 libsvtav1 or libaom-av1, h264 libx264, hevc libx265, vp9 libvpx-vp9, prores prores_ks. Default: the first the workers' FFmpeg has (av1: SVT-AV1). Only workers that have it get the job's segments. CLI: --video-encoder.",
      "type": "string",
      "enum": ["libx264", "libx265", "libvpx-vp9", "libsvtav1", "libaom-av1", "prores_ks"]
     },
     "preset": {
      "description": "Speed/quality trade-off: an x264/x265 preset (ultrafast … placebo), a vp9 speed 0…8 or an av1 (SVT-AV1) speed 0…13 as text; not for prores. CLI: --preset.",
      "type": "string"
     },
     "keyframeInterval": {
      "description": "Most frames between keyframes, 1…10000. Default: 10 s worth, plus scene cuts. CLI: --keyframe-interval.",
      "type": "integer",
      "minimum": 1,
      "maximum": 10000
     },
     "frameRate": {
      "description": "Constant output frame rate in frames per second, up to 1000. Default: the source's timing kept (variable rate preserved). CLI: --frame-rate.",
      "$ref": "#/components/schemas/Rational"
     },
     "pixelFormat": {
      "description": "FFmpeg pixel format name (yuv420p, yuv420p10le, yuv422p10le…). Default: 4:2:0 at the source's bit depth. CLI: --pixel-format.",
      "type": "string"
     },
     "toneMap": {
      "description": "Map an HDR (PQ/HLG) source to 8-bit SDR BT.709; without it HDR stays HDR, 10-bit. Default false. CLI: --tone-map.",
      "type": "boolean"
     },
     "squarePixels": {
      "description": "Scale an anamorphic source (pixels not square: 720x480 DVD, 1440x1080 HDV) to square pixels at its display width. Default false: without a size the output keeps the stored size and writes the pixel aspect ratio; a width or height always gives square pixels. CLI: --square-pixels.",
      "type": "boolean"
     }
    }
   },
   "AudioSettings": {
    "description": "Fields left out take defaults from the source when the job is planned: its sample rate (48 kHz for opus unless the source's is one opus takes), its channel count, and 64 kbit/s per channel.",
    "type": "object",
    "required": [
     "codec"
    ],
    "additionalProperties": false,
    "properties": {
     "codec": {
      "description": "The audio codec. mp4: aac, opus; mov: aac, pcm; mkv: any; webm: opus. CLI: --audio-codec.",
      "enum": [
       "aac",
       "opus",
       "pcm"
      ]
     },
     "sampleRate": {
      "description": "Output sample rate in Hz (resampled when it differs). aac: 8000…96000 in its standard rates; opus: 8000, 12000, 16000, 24000, 48000; pcm: 1000…384000. CLI: --sample-rate.",
      "type": "integer",
      "minimum": 1000,
      "maximum": 384000
     },
     "channels": {
      "description": "Output channel count, 1…8 (remixed when it differs). CLI: --channels.",
      "type": "integer",
      "minimum": 1,
      "maximum": 8
     },
     "channelLayout": {
      "description": "Output channel layout by FFmpeg name (mono, stereo, 5.1…); overrides channels. CLI: --channel-layout.",
      "type": "string"
     },
     "bitrate": {
      "description": "Bit rate in bits per second, 6000…1,536,000; not for pcm. CLI: --audio-bitrate.",
      "type": "integer",
      "minimum": 6000,
      "maximum": 1536000
     }
    }
   },
   "AnnotationTime": {
    "description": "A time as an exact {value, timescale}, a decimal number of seconds (read as its digits, never through floating point), or text: seconds (\"1.5\"), HH:MM:SS.fff or a ratio (\"3/2\").",
    "oneOf": [
     {
      "$ref": "#/components/schemas/MediaTime"
     },
     {
      "type": "number"
     },
     {
      "type": "string"
     }
    ]
   },
   "TimedAnnotation": {
    "description": "A text value valid from time for duration, in output time.",
    "type": "object",
    "required": [
     "time",
     "duration",
     "value"
    ],
    "additionalProperties": false,
    "properties": {
     "time": {
      "description": "When it starts; not negative.",
      "$ref": "#/components/schemas/AnnotationTime"
     },
     "duration": {
      "description": "How long it lasts; longer than zero.",
      "$ref": "#/components/schemas/AnnotationTime"
     },
     "value": {
      "description": "The text (UTF-8).",
      "type": "string"
     }
    }
   },
   "LadderRung": {
    "description": "One rendition of the ladder: its size and capped bit rate.",
    "type": "object",
    "required": [
     "height",
     "bitrate",
     "maxBitrate",
     "bufferSize"
    ],
    "additionalProperties": false,
    "properties": {
     "width": {
      "description": "Width in pixels, 16…16384; absent: the source's aspect at height.",
      "type": "integer",
      "minimum": 16,
      "maximum": 16384
     },
     "height": {
      "description": "Height in pixels, 16…16384.",
      "type": "integer",
      "minimum": 16,
      "maximum": 16384
     },
     "bitrate": {
      "description": "Average bit rate in bits per second, 10,000…2,000,000,000.",
      "type": "integer",
      "minimum": 10000,
      "maximum": 2000000000
     },
     "maxBitrate": {
      "description": "VBV max rate in bits per second (`splice` sends 110 % of bitrate).",
      "type": "integer",
      "minimum": 1
     },
     "bufferSize": {
      "description": "VBV buffer in bits (`splice` sends 2 s of bitrate).",
      "type": "integer",
      "minimum": 1
     }
    }
   },
   "PackageRequest": {
    "type": "object",
    "required": [
     "segmentDuration",
     "hls",
     "dash"
    ],
    "additionalProperties": false,
    "properties": {
     "ladder": {
      "description": "The rungs, at least one. Absent: automatic (Apple's HLS authoring ladder at or below the source's height). CLI: --ladder.",
      "type": "array",
      "minItems": 1,
      "items": {
       "$ref": "#/components/schemas/LadderRung"
      }
     },
     "segmentDuration": {
      "description": "Length of the streaming segments, 1…60 s (`splice` sends 6 s unless --hls-segment-seconds): every rendition has an IDR picture at each multiple.",
      "$ref": "#/components/schemas/MediaTime"
     },
     "hls": {
      "description": "Write the HLS master and media playlists (`splice`: true for an .m3u8 output).",
      "type": "boolean"
     },
     "dash": {
      "description": "Write a DASH manifest over the same segments (`splice`: true for an .mpd output or --dash). hls or dash must be true.",
      "type": "boolean"
     }
    }
   }
  }
 }
}
"""#
}
