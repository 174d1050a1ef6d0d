public import SpliceConcurrency

/// How to reach object storage: credentials, region, endpoint and addressing, and how hard to
/// try. ``fromEnvironment(_:)`` builds one the way the AWS CLI and SDKs do; the remaining
/// settings (part size, retries, timeouts) have defaults that suit media files.
///
/// `description` is safe to log: it never shows the secret key or the session token.
public struct ObjectStoreConfiguration: Sendable, CustomStringConvertible {
    /// How the bucket goes into the URL.
    public enum AddressingStyle: String, Sendable, Hashable {
        /// Virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`) on AWS when the bucket
        /// name allows it; path-style on a custom endpoint (every S3-compatible service serves it).
        case automatic = "auto"
        /// `https://ENDPOINT/BUCKET/KEY`.
        case path
        /// `https://BUCKET.ENDPOINT/KEY`.
        case virtualHosted = "virtual"
    }

    /// How a write that must not replace an existing object (no `-y`) is guarded.
    public enum ConditionalWrites: String, Sendable, Hashable {
        /// `If-None-Match: *` on the PUT or the multipart completion (atomic: the service refuses
        /// if the key appeared meanwhile); on a custom endpoint also a HEAD first, because a
        /// service that ignores the header would otherwise overwrite silently. A service that
        /// answers 501 to the header is then written without it (after the HEAD).
        case automatic
        /// Trust `If-None-Match: *` alone (AWS S3 since 2024, recent MinIO, R2).
        case ifNoneMatch
        /// HEAD, then write without the header: for services that do not implement it. There
        /// is a window between the HEAD and the write in which another writer can slip in.
        case headThenWrite
    }

    /// The access key, or nil to send unsigned requests (public buckets only).
    public var credentials: ObjectStoreCredentials?
    /// The region requests are signed for (`us-east-1` when nothing says otherwise).
    public var region: String
    /// An S3-compatible service's base URL (`http://127.0.0.1:9000`), or nil for AWS S3 itself.
    public var endpoint: String?
    /// How the bucket goes into the URL.
    public var addressingStyle: AddressingStyle
    /// How `overwrite: false` writes are guarded.
    public var conditionalWrites: ConditionalWrites
    /// Where the settings came from (profile, files), for messages.
    public var origin: String

    /// Multipart part size: the first part's size; later parts double every 1,000 parts so the
    /// 10,000-part limit is never reached (8 MiB parts: 8 GiB in 1,000 parts, 5 TiB in ~9,000).
    /// At least 5 MiB (S3's minimum for all but the last part).
    public var partSize: Int
    /// Parts uploaded at once by one writer (memory: about `partSize` × (this + 1)).
    public var concurrentParts: Int
    /// How far a reader's streaming GET may run ahead of what has been read (its memory, besides
    /// the socket's buffers); a forward seek within this distance waits for the stream instead
    /// of starting a new GET.
    public var readAheadBytes: Int
    /// Requests in flight at once across the whole store (each on a dedicated thread).
    public var maxConnections: Int
    /// How long to wait for a connection to open.
    public var connectTimeout: Duration
    /// How long a transfer may move no byte at all before it is given up (and retried).
    public var stallTimeout: Duration
    /// Attempts per request (the first included) for failures that can pass: 5xx, SlowDown,
    /// timeouts, broken connections. 4xx answers are never retried.
    public var maxAttempts: Int
    /// The wait between attempts: exponential, with jitter.
    public var retryBackoff: Backoff

    /// The smallest part S3 accepts (all but the last part).
    public static let minimumPartSize = 5 << 20

    /// A configuration with explicit credentials and the defaults for everything else.
    public init(credentials: ObjectStoreCredentials?, region: String = "us-east-1", endpoint: String? = nil,
                addressingStyle: AddressingStyle = .automatic, conditionalWrites: ConditionalWrites = .automatic,
                origin: String = "given") {
        self.credentials = credentials
        self.region = region
        self.endpoint = endpoint
        self.addressingStyle = addressingStyle
        self.conditionalWrites = conditionalWrites
        self.origin = origin
        partSize = 8 << 20
        concurrentParts = 4
        readAheadBytes = 8 << 20
        maxConnections = 16
        connectTimeout = .seconds(10)
        stallTimeout = .seconds(30)
        maxAttempts = 5
        retryBackoff = Backoff(base: .milliseconds(200), cap: .seconds(10), jitter: 0.5)
    }

    /// Whether requests go to AWS S3 itself (no custom endpoint).
    public var isAWS: Bool { endpoint == nil }

    public var description: String {
        let who = credentials?.description ?? "no credentials (unsigned requests)"
        return "object store \(endpoint ?? "AWS S3") region \(region), \(who), "
            + "\(addressingStyle.rawValue) addressing (settings from \(origin))"
    }

    /// Checks the settings that would otherwise fail far from their cause.
    func validated() throws(ObjectStoreError) -> ObjectStoreConfiguration {
        guard partSize >= Self.minimumPartSize else {
            throw ObjectStoreError(.invalidConfiguration, "part size \(partSize) bytes is below S3's minimum of 5 MiB")
        }
        guard concurrentParts >= 1, maxConnections >= 1, maxAttempts >= 1, readAheadBytes >= 1 else {
            throw ObjectStoreError(.invalidConfiguration, "concurrent parts, connections, attempts and read-ahead must be at least 1")
        }
        guard !region.isEmpty, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw ObjectStoreError(.invalidConfiguration, "region \"\(region)\" is not a region name (like eu-west-1)")
        }
        _ = try S3Endpoint(configuration: self)
        return self
    }
}
