/// One HTTP request as libcurl will send it, signed or not.
struct HTTPRequest: Sendable {
    enum Method: String, Sendable {
        case get = "GET", head = "HEAD", put = "PUT", post = "POST", delete = "DELETE"
    }

    var method: Method
    /// The full URL, already in SigV4's canonical encoding (``S3Endpoint/url(bucket:key:query:)``).
    var url: String
    /// Headers to send besides Host and those curl adds for signing (X-Amz-Date, Authorization).
    var headers: [(name: String, value: String)]
    /// The body (sent with Content-Length; curl reads it from memory and rewinds it to resend).
    var body: [UInt8]
    /// How the request is signed: nil for an unsigned request.
    var signing: Signing?
    /// How many body bytes the caller expects (a ranged GET's length), to size the buffer once.
    var expectedResponseBytes: Int = 0
    /// Where a 2xx answer's body goes as it arrives, instead of into ``HTTPResponse/body``
    /// (error bodies are still collected, to be read).
    var sink: (any ResponseSink)?

    /// SigV4 signing parameters handed to CURLOPT_AWS_SIGV4.
    struct Signing: Sendable {
        /// `aws:amz:REGION:s3`.
        var provider: String
        var accessKeyID: String
        var secretAccessKey: String
    }
}

/// What the server answered.
struct HTTPResponse: Sendable {
    var status: Int
    /// Response headers, names lowercased, in the order received (of the final response only).
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first header called `name` (give it lowercase).
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the status is 2xx.
    var isSuccess: Bool { (200..<300).contains(status) }
}

/// Why a transfer produced no HTTP answer: libcurl's error code and message.
struct TransportFailure: Error, Sendable {
    enum Kind: Sendable {
        /// Connecting, resolving, TLS, a reset or truncated transfer: another attempt may pass.
        case connection
        /// No byte moved for the stall timeout, or no connection within the connect timeout.
        case timeout
        /// The caller cancelled the transfer.
        case cancelled
        /// A mistake no retry fixes (malformed URL, unsupported protocol, bad TLS certificate).
        case permanent
    }

    var kind: Kind
    /// CURLcode's value.
    var curlCode: Int
    /// libcurl's own explanation (its error buffer, else curl_easy_strerror).
    var message: String
}

/// Takes a response body as it arrives, on the transfer thread. It may block (the transfer then
/// waits, and TCP slows the sender down); returning false aborts the transfer.
protocol ResponseSink: AnyObject, Sendable {
    /// Takes the next bytes of the body; false to stop the transfer.
    func accept(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// How many body bytes it has taken so far (a request that delivered some is not retried).
    var delivered: Int64 { get }
}
