public import SpliceCore

/// An error from object storage: a stable `code`, the HTTP status and the service's own error
/// code when the service answered, one line for people that names the bucket and key and says
/// what to do, and whether trying again later can help.
///
/// Messages never contain a secret key, a session token or a request signature.
public struct ObjectStoreError: SpliceError, Equatable {
    /// A stable identifier for the kind of failure; match on it, not on the message.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable string form, e.g. `not-found`.
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The text is not an `s3://BUCKET/KEY` location S3 would accept.
        public static let invalidLocation = Code("invalid-location")
        /// The environment or `~/.aws` files name something impossible (a missing profile, an
        /// endpoint that is not a URL, a profile whose credentials Splice cannot obtain).
        public static let invalidConfiguration = Code("invalid-configuration")
        /// The object (or the multipart upload) does not exist.
        public static let notFound = Code("not-found")
        /// The bucket does not exist.
        public static let noSuchBucket = Code("no-such-bucket")
        /// The object exists and the write was asked not to replace it (`-y` not given).
        public static let alreadyExists = Code("already-exists")
        /// The object changed while it was being read (its ETag is not the one first seen).
        public static let objectChanged = Code("object-changed")
        /// The service does not know the access key, the signature does not match the secret,
        /// or the session token expired.
        public static let invalidCredentials = Code("invalid-credentials")
        /// The credentials are valid but not allowed this operation on this bucket or key.
        public static let accessDenied = Code("access-denied")
        /// The bucket lives in another region than the one requests are signed for.
        public static let wrongRegion = Code("wrong-region")
        /// A byte range beyond the object's end was asked for.
        public static let invalidRange = Code("invalid-range")
        /// The service does not implement what was asked (e.g. conditional writes).
        public static let notImplemented = Code("not-implemented")
        /// The service refused the request for another reason; `serviceCode` says which.
        public static let requestRejected = Code("request-rejected")
        /// The service failed (5xx) or asked to slow down, and kept doing so through every retry.
        public static let serviceUnavailable = Code("service-unavailable")
        /// No connection could be made or it broke (DNS, refused, reset, TLS), through every retry.
        public static let connectionFailed = Code("connection-failed")
        /// The service stopped answering for longer than the stall timeout, through every retry.
        public static let timedOut = Code("timed-out")
        /// The answer could not be understood (not the XML S3 sends).
        public static let invalidResponse = Code("invalid-response")
        /// The caller cancelled the operation; any multipart upload it started was aborted.
        public static let cancelled = Code("cancelled")
        /// A local file to upload cannot be opened or read.
        public static let localFile = Code("local-file")
        /// The writer was used after it finished, failed or was aborted.
        public static let writerClosed = Code("writer-closed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation naming the bucket and key and what to do next.
    public var message: String
    /// Whether running the same operation again may succeed.
    public var isRetryable: Bool
    /// The HTTP status of the service's answer, when it answered.
    public var httpStatus: Int?
    /// The service's error code (`NoSuchKey`, `SignatureDoesNotMatch`, `SlowDown`…), when it sent one.
    public var serviceCode: String?

    /// Creates an error; `isRetryable` defaults to false.
    public init(_ code: Code, _ message: String, isRetryable: Bool = false, httpStatus: Int? = nil,
                serviceCode: String? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.httpStatus = httpStatus
        self.serviceCode = serviceCode
    }

    public var description: String {
        var text = "object store error \(code.rawValue)"
        switch (httpStatus, serviceCode) {
        case let (status?, service?): text += " (HTTP \(status) \(service))"
        case let (status?, nil): text += " (HTTP \(status))"
        case let (nil, service?): text += " (\(service))"
        case (nil, nil): break
        }
        return text + ": " + message
    }
}
