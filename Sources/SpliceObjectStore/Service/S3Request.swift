import SpliceCore

/// One S3 operation's request, before it becomes a URL and headers: what it is called (for
/// messages), the bucket and key it concerns, its query, headers and body.
struct S3Request: Sendable {
    /// The S3 API operation (`GetObject`, `UploadPart`…), named in messages.
    var operation: String
    var method: HTTPRequest.Method
    var bucket: String
    var key: String
    var query: [(String, String)] = []
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Whether the body's SHA-256 goes into the signature (small XML bodies) or the body is sent
    /// as `UNSIGNED-PAYLOAD` (parts and objects: TLS protects them in transit, and hashing
    /// hundreds of MiB before sending would cost more than the transfer on loopback).
    var signsPayload = true
    /// Statuses that are answers, not failures, for this operation (404 for a HEAD that asks
    /// whether an object exists).
    var accepting: Set<Int> = []
    /// A ranged GET's length, to size the receive buffer once.
    var expectedResponseBytes = 0
    /// Where a successful answer's body streams to (``ObjectReader``); such a request is not
    /// retried once the sink has taken bytes (the reader resumes from where it is instead).
    var sink: (any ResponseSink)?

    init(_ operation: String, _ method: HTTPRequest.Method, bucket: String, key: String = "") {
        self.operation = operation
        self.method = method
        self.bucket = bucket
        self.key = key
    }

    /// `s3://bucket/key` (or `s3://bucket` for a bucket operation), for messages.
    var target: String { key.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(key)" }

    /// SHA-256 of the empty body, in hex: the payload hash of every GET, HEAD and DELETE.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The value of `x-amz-content-sha256`, which S3 requires on every signed request and which
    /// libcurl then uses as the payload hash of its canonical request.
    var payloadHash: String {
        if body.isEmpty { return Self.emptyPayloadHash }
        return signsPayload ? SHA256.hexDigest(of: body) : "UNSIGNED-PAYLOAD"
    }

    /// The HTTP request for `endpoint`, signed with `credentials` for `region` when given.
    func httpRequest(endpoint: S3Endpoint, region: String, credentials: ObjectStoreCredentials?) -> HTTPRequest {
        var headers = self.headers
        var signing: HTTPRequest.Signing?
        if let credentials {
            headers.append(("x-amz-content-sha256", payloadHash))
            if let token = credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
            signing = HTTPRequest.Signing(provider: "aws:amz:\(region):s3", accessKeyID: credentials.accessKeyID,
                                          secretAccessKey: credentials.secretAccessKey)
        }
        return HTTPRequest(method: method, url: endpoint.url(bucket: bucket, key: key, query: query), headers: headers,
                           body: body, signing: signing, expectedResponseBytes: expectedResponseBytes, sink: sink)
    }
}
