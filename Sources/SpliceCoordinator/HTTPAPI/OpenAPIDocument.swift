/// The OpenAPI 3.1 document of the HTTP API, served at `GET /v1/openapi.json` (docs/api.md). The
/// settings' schemas are docs/schema/transcode-request.json's (a test holds them equal), the rest
/// describes the routes of ``HTTPAPIHandler`` and their answers.
///
/// The document is one JSON text kept in three literals (this file: the info, the paths, the shared
/// responses and the first schemas; `OpenAPIDocument+Jobs.swift`: the job schemas;
/// `OpenAPIDocument+Settings.swift`: the settings' schemas), joined with newlines.
enum OpenAPIDocument {
    static let text = [head, jobSchemas, settingsSchemas].joined(separator: "\n")

    private static let head = #"""
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
"""#
}
