extension OpenAPIDocument {
    /// The job schemas: settings, job, states, deliveries, lists (``OpenAPIDocument/text``'s middle).
    static let jobSchemas = #"""
   "JobSettings": {
    "title": "JobSettings",
    "description": "The export settings: every field of the transcode request (docs/schema/transcode-request.json), with the CLI's defaults for what is left out. `fileType` defaults to the output's extension.",
    "type": "object",
    "additionalProperties": false,
    "properties": {
     "fileType": {
      "description": "The output container. No default: `splice` takes it from the output's extension (.m3u8/.mpd: mp4).",
      "enum": [
       "mp4",
       "mov",
       "mkv",
       "webm"
      ]
     },
     "video": {
      "description": "How to encode the video. Absent: the default for the container (h264, vp9 for webm; everything else from the source), unless includesVideo is false or copiesVideo is true. CLI: --video-codec, --crf, --width…",
      "$ref": "#/components/schemas/VideoSettings"
     },
     "includesVideo": {
      "description": "false leaves the video out (CLI: --no-video); then video and copiesVideo must be absent or false. Default true.",
      "type": "boolean"
     },
     "copiesVideo": {
      "description": "Copy the video packets from the source instead of encoding them (CLI: --copy-video); the output then starts and ends on keyframes. Needs audio to encode; excludes video. Default false.",
      "type": "boolean"
     },
     "audio": {
      "description": "How to encode every selected audio track. Absent: the default for the container (aac, opus for webm; sample rate, channels from the source, 64 kbit/s per channel), unless audioTracks is \"none\" or copiesAudio is true. CLI: --audio-codec, --audio-bitrate…",
      "$ref": "#/components/schemas/AudioSettings"
     },
     "audioTracks": {
      "description": "Which audio tracks the output carries: \"all\" (default), \"none\" (CLI: --no-audio), track numbers as `splice probe` prints them (\"1,3\"), or ISO 639-2 languages (\"eng,fra\"). CLI: --audio-tracks.",
      "type": "string",
      "pattern": "^(?i:all|none|[0-9]+(,[0-9]+)*|[a-z]{2,3}(,[a-z]{2,3})*)$"
     },
     "copiesAudio": {
      "description": "Copy the selected audio tracks' packets from the source, priming and edit list included (CLI: --copy-audio); excludes audio. Default false.",
      "type": "boolean"
     },
     "range": {
      "description": "The part of the source to transcode, from start for duration (both exact times; duration longer than zero). Absent: all of it. CLI: --start, --duration.",
      "$ref": "#/components/schemas/MediaTimeRange"
     },
     "segmentDuration": {
      "description": "Target length of the video segments encoded in parallel, cut on source keyframes; at least 1 s. Absent: 10 s, or longer (up to 60 s) for bit-rate video and ladders where the cluster has few slots, since each segment after the first encodes a 2 s rate-control warm-up; given, the length is kept. CLI: --segment-seconds.",
      "$ref": "#/components/schemas/MediaTime"
     },
     "audioSegmentDuration": {
      "description": "Target length of audio segments, at least 1 s. Absent: the longer of segmentDuration and 60 s. CLI: --audio-segment-seconds.",
      "$ref": "#/components/schemas/MediaTime"
     },
     "optimizesForNetworkUse": {
      "description": "Put the MP4/MOV index first so playback can start while downloading (CLI: --faststart). Default false.",
      "type": "boolean"
     },
     "metadata": {
      "description": "Global tags for the output, over the source's own (CLI: --metadata key=value). Default none.",
      "type": "object",
      "additionalProperties": {
       "type": "string"
      }
     },
     "overwrite": {
      "description": "Whether an existing output may be replaced (never the input). Default false: a SUBMIT whose output exists is ERROR output-exists. CLI: -y, --overwrite.",
      "type": "boolean"
     },
     "subtitles": {
      "description": "Subtitle tracks: \"copy\" (default; converted to mov_text for mp4/mov, WebVTT for webm) or \"none\". CLI: --subtitles.",
      "enum": [
       "copy",
       "none"
      ]
     },
     "dataTracks": {
      "description": "Timed-metadata and timecode tracks: \"copy\" (default; only mp4/mov hold timed metadata) or \"none\". CLI: --data-tracks.",
      "enum": [
       "copy",
       "none"
      ]
     },
     "annotations": {
      "description": "Timed annotations written as a metadata track beside the video (mp4/mov only; at most 10,000, 1 MiB of text). Default none. CLI: --annotations FILE.",
      "type": "array",
      "maxItems": 10000,
      "items": {
       "$ref": "#/components/schemas/TimedAnnotation"
      }
     },
     "package": {
      "description": "A streaming package (an HLS/DASH ladder of CMAF renditions) instead of one file; needs fileType mp4 and video h264 without a size, quality or bit rate of its own. Absent: one file. CLI: an .m3u8 or .mpd output, --ladder, --hls-segment-seconds, --dash.",
      "$ref": "#/components/schemas/PackageRequest"
     }
    }
   },
   "Job": {
    "type": "object",
    "required": [
     "id",
     "state",
     "input",
     "output",
     "priority",
     "progress",
     "submittedAt"
    ],
    "properties": {
     "id": {
      "type": "string",
      "format": "uuid"
     },
     "state": {
      "$ref": "#/components/schemas/JobState"
     },
     "input": {
      "type": "string"
     },
     "output": {
      "type": "string"
     },
     "priority": {
      "type": "integer"
     },
     "reference": {
      "type": "string"
     },
     "settings": {
      "type": "object",
      "description": "The settings as the coordinator decoded them, defaults applied."
     },
     "progress": {
      "type": "object",
      "required": [
       "fraction",
       "segmentsDone"
      ],
      "properties": {
       "fraction": {
        "type": "number",
        "minimum": 0,
        "maximum": 1
       },
       "segmentsDone": {
        "type": "integer",
        "minimum": 0
       },
       "segmentsTotal": {
        "type": "integer",
        "minimum": 1
       }
      }
     },
     "segments": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "index",
        "state"
       ],
       "properties": {
        "index": {
         "type": "integer"
        },
        "state": {
         "type": "string",
         "enum": [
          "pending",
          "leased",
          "done",
          "failed",
          "dead",
          "cancelled"
         ]
        },
        "figures": {
         "type": "object",
         "properties": {
          "videoBytes": {
           "type": "integer"
          },
          "videoBitsPerSecond": {
           "type": "integer"
          },
          "meanQP": {
           "type": "number"
          }
         }
        }
       }
      }
     },
     "backups": {
      "type": "object",
      "properties": {
       "started": {
        "type": "integer"
       },
       "won": {
        "type": "integer"
       }
      }
     },
     "waiting": {
      "type": "string"
     },
     "error": {
      "type": "string"
     },
     "submittedAt": {
      "type": "string",
      "format": "date-time"
     },
     "startedAt": {
      "type": "string",
      "format": "date-time"
     },
     "finishedAt": {
      "type": "string",
      "format": "date-time"
     },
     "webhook": {
      "type": "object",
      "required": [
       "url",
       "ownSecret"
      ],
      "properties": {
       "url": {
        "type": "string"
       },
       "ownSecret": {
        "type": "boolean"
       },
       "deliveries": {
        "type": "array",
        "items": {
         "$ref": "#/components/schemas/WebhookDelivery"
        }
       }
      }
     }
    }
   },
   "JobState": {
    "type": "string",
    "enum": [
     "queued",
     "planning",
     "running",
     "stitching",
     "succeeded",
     "failed",
     "cancelled"
    ]
   },
   "WebhookDelivery": {
    "type": "object",
    "required": [
     "event",
     "type",
     "attempt",
     "at",
     "durationMs",
     "outcome"
    ],
    "properties": {
     "event": {
      "type": "string",
      "format": "uuid"
     },
     "type": {
      "type": "string",
      "enum": [
       "job.planned",
       "job.succeeded",
       "job.failed",
       "job.cancelled"
      ]
     },
     "attempt": {
      "type": "integer",
      "minimum": 1
     },
     "at": {
      "type": "string",
      "format": "date-time"
     },
     "status": {
      "type": "integer"
     },
     "error": {
      "type": "string"
     },
     "durationMs": {
      "type": "integer",
      "minimum": 0
     },
     "outcome": {
      "type": "string",
      "enum": [
       "delivered",
       "failed",
       "expired"
      ]
     }
    }
   },
   "JobList": {
    "type": "object",
    "required": [
     "jobs"
    ],
    "properties": {
     "jobs": {
      "type": "array",
      "items": {
       "$ref": "#/components/schemas/Job"
      }
     },
     "next": {
      "type": "string",
      "description": "The cursor of the next page; absent on the last."
     }
    }
   },
   "WorkerList": {
    "type": "object",
    "required": [
     "workers"
    ],
    "properties": {
     "workers": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "key",
        "enrolled",
        "connected",
        "running"
       ],
       "properties": {
        "key": {
         "type": "string"
        },
        "name": {
         "type": "string"
        },
        "enrolled": {
         "type": "boolean"
        },
        "connected": {
         "type": "boolean"
        },
        "slots": {
         "type": "integer"
        },
        "running": {
         "type": "integer"
        },
        "lastSeenAt": {
         "type": "string",
         "format": "date-time"
        },
        "quarantine": {
         "type": "object",
         "properties": {
          "remainingMs": {
           "type": "integer"
          },
          "reason": {
           "type": "string"
          }
         }
        },
        "storage": {
         "type": "string"
        },
        "usableCores": {
         "type": "integer"
        },
        "threadsPerSlot": {
         "type": "integer"
        },
        "protocolVersion": {
         "type": "integer",
         "description": "The worker-protocol version its session speaks (splice-worker 2 or 3)"
        }
       }
      }
     }
    }
   },
"""#
}
