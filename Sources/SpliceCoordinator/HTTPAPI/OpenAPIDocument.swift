/// The OpenAPI 3.1 document of the HTTP API, served at `GET /v1/openapi.json` (docs/api.md). The
/// settings' schemas are docs/schema/transcode-request.json's (a test holds them equal), the rest
/// describes the routes of ``HTTPAPIHandler`` and their answers.
enum OpenAPIDocument {
    static let text = #"""
{
 "openapi": "3.1.0",
 "info": {
  "title": "Splice HTTP API",
  "version": "1",
  "description": "Jobs over HTTP on a Splice coordinator (`splice coordinator --http-endpoint`): submit, read, list, cancel, follow as Server-Sent Events; signed webhooks. docs/api.md."
 },
 "servers": [
  {
   "url": "/"
  }
 ],
 "paths": {
  "/v1/jobs": {
   "post": {
    "operationId": "createJob",
    "summary": "Submit a job",
    "description": "Creates a job (201), or answers the job an earlier request with the same `Idempotency-Key` and the same body created (200).",
    "security": [
     {
      "bearer": [
       "submit"
      ]
     }
    ],
    "responses": {
     "201": {
      "description": "The job was created.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      },
      "headers": {
       "Location": {
        "description": "The job.",
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "200": {
      "description": "The job an earlier request with this Idempotency-Key created.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      },
      "headers": {
       "Location": {
        "description": "The job.",
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    },
    "parameters": [
     {
      "name": "Idempotency-Key",
      "in": "header",
      "required": false,
      "description": "Makes the request safe to repeat: the same key and body give the same job; the same key with another body is 422, and 409 while the first request is being answered.",
      "schema": {
       "type": "string",
       "minLength": 1,
       "maxLength": 255,
       "pattern": "^[!-~]+$"
      }
     }
    ],
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "$ref": "#/components/schemas/JobRequest"
       }
      }
     }
    }
   },
   "get": {
    "operationId": "listJobs",
    "summary": "List jobs",
    "description": "Jobs newest first, a page at a time: pass `next` as `cursor` for the next page.",
    "security": [
     {
      "bearer": [
       "read"
      ]
     }
    ],
    "responses": {
     "200": {
      "description": "A page of jobs.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/JobList"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    },
    "parameters": [
     {
      "name": "state",
      "in": "query",
      "required": false,
      "description": "Only jobs in these states (comma-separated).",
      "schema": {
       "type": "string",
       "pattern": "^(queued|planning|running|stitching|succeeded|failed|cancelled)(,(queued|planning|running|stitching|succeeded|failed|cancelled))*$"
      }
     },
     {
      "name": "reference",
      "in": "query",
      "required": false,
      "description": "Only jobs submitted with this reference.",
      "schema": {
       "type": "string",
       "minLength": 1,
       "maxLength": 256
      }
     },
     {
      "name": "limit",
      "in": "query",
      "required": false,
      "description": "Jobs per page.",
      "schema": {
       "type": "integer",
       "minimum": 1,
       "maximum": 1000,
       "default": 50
      }
     },
     {
      "name": "cursor",
      "in": "query",
      "required": false,
      "description": "Where the page starts: the `next` of the previous page.",
      "schema": {
       "type": "string",
       "minLength": 1,
       "maxLength": 200
      }
     }
    ]
   }
  },
  "/v1/jobs/{id}": {
   "get": {
    "operationId": "getJob",
    "summary": "Read a job",
    "description": "The job: its state, progress, every segment with its figures, its output, its error, and its webhook deliveries.",
    "security": [
     {
      "bearer": [
       "read"
      ]
     }
    ],
    "responses": {
     "200": {
      "description": "The job.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    },
    "parameters": [
     {
      "name": "id",
      "in": "path",
      "required": true,
      "description": "The job id.",
      "schema": {
       "type": "string",
       "format": "uuid"
      }
     }
    ]
   }
  },
  "/v1/jobs/{id}/cancel": {
   "post": {
    "operationId": "cancelJob",
    "summary": "Cancel a job",
    "description": "Cancels the job if it has not finished (a finished job keeps its state) and answers it.",
    "security": [
     {
      "bearer": [
       "cancel"
      ]
     }
    ],
    "responses": {
     "200": {
      "description": "The job after the cancel.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Job"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    },
    "parameters": [
     {
      "name": "id",
      "in": "path",
      "required": true,
      "description": "The job id.",
      "schema": {
       "type": "string",
       "format": "uuid"
      }
     }
    ]
   }
  },
  "/v1/jobs/{id}/events": {
   "get": {
    "operationId": "jobEvents",
    "summary": "Follow a job",
    "description": "Server-Sent Events: `state` events (with ids: reconnect with `Last-Event-ID` to get the ones missed) and `progress` events; the stream ends after the final state. 204 when the job has ended and `Last-Event-ID` is its last event.",
    "security": [
     {
      "bearer": [
       "read"
      ]
     }
    ],
    "responses": {
     "200": {
      "description": "The event stream.",
      "content": {
       "text/event-stream": {
        "schema": {
         "type": "string"
        }
       }
      }
     },
     "204": {
      "description": "The job has ended and the client has seen its last event."
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    },
    "parameters": [
     {
      "name": "id",
      "in": "path",
      "required": true,
      "description": "The job id.",
      "schema": {
       "type": "string",
       "format": "uuid"
      }
     },
     {
      "name": "Last-Event-ID",
      "in": "header",
      "required": false,
      "description": "The id of the last event received.",
      "schema": {
       "type": "string",
       "pattern": "^[0-9]{1,18}$"
      }
     }
    ]
   }
  },
  "/v1/workers": {
   "get": {
    "operationId": "listWorkers",
    "summary": "List workers",
    "description": "Every enrolled worker key with its live session.",
    "security": [
     {
      "bearer": [
       "read"
      ]
     }
    ],
    "responses": {
     "200": {
      "description": "The workers.",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/WorkerList"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    }
   }
  },
  "/v1/openapi.json": {
   "get": {
    "operationId": "openapi",
    "summary": "This document",
    "security": [],
    "responses": {
     "200": {
      "description": "The OpenAPI document.",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Problem"
     }
    }
   }
  }
 },
 "components": {
  "securitySchemes": {
   "bearer": {
    "type": "http",
    "scheme": "bearer",
    "description": "A token from `splice tokens create NAME --scopes …`; its scopes say what it may do (read, submit, cancel, admin)."
   }
  },
  "responses": {
   "Problem": {
    "description": "An error, as RFC 9457 problem details.",
    "content": {
     "application/problem+json": {
      "schema": {
       "$ref": "#/components/schemas/Problem"
      }
     }
    }
   }
  },
  "schemas": {
   "Problem": {
    "type": "object",
    "required": [
     "type",
     "title",
     "status",
     "detail"
    ],
    "properties": {
     "type": {
      "type": "string",
      "description": "A stable URI per kind of error (urn:splice:problem:…)."
     },
     "title": {
      "type": "string"
     },
     "status": {
      "type": "integer"
     },
     "detail": {
      "type": "string"
     },
     "instance": {
      "type": "string"
     },
     "field": {
      "type": "string",
      "description": "The request field at fault."
     }
    }
   },
   "JobRequest": {
    "type": "object",
    "additionalProperties": false,
    "required": [
     "input",
     "output"
    ],
    "properties": {
     "input": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "An absolute path the coordinator and workers see, or an http(s) URL."
     },
     "output": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "An absolute path; .m3u8/.mpd make a streaming package."
     },
     "settings": {
      "$ref": "#/components/schemas/JobSettings"
     },
     "priority": {
      "type": "integer",
      "minimum": -1000,
      "maximum": 1000,
      "default": 0
     },
     "reference": {
      "type": "string",
      "minLength": 1,
      "maxLength": 256,
      "description": "The caller's own id for the job; `GET /v1/jobs?reference=` finds it."
     },
     "webhook": {
      "type": "object",
      "additionalProperties": false,
      "required": [
       "url"
      ],
      "properties": {
       "url": {
        "type": "string",
        "format": "uri",
        "maxLength": 2048,
        "description": "Where the job's events are POSTed (http or https)."
       },
       "secret": {
        "type": "string",
        "minLength": 16,
        "maxLength": 256,
        "description": "The job's own signing secret; absent: the coordinator's."
       }
      }
     }
    }
   },
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
      "description": "Target length of the video segments encoded in parallel, cut on source keyframes; at least 1 s. Default 10 s. CLI: --segment-seconds.",
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
        }
       }
      }
     }
    }
   },
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
