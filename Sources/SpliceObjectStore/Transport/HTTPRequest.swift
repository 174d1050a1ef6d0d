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
