import Testing
@testable import SpliceObjectStore

/// Reading S3's answers: the XML it sends, and what each failure means for the caller.
@Suite("S3 answers: XML and the errors they become")
struct S3ResponseTests {
    static let listing = """
        <?xml version="1.0" encoding="UTF-8"?>
        <ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Bucket>media</Bucket><KeyMarker></KeyMarker><UploadIdMarker/>
          <NextKeyMarker>shows/b&amp;c.mp4</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>
          <MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>
          <Upload><Key>shows/a.mp4</Key><UploadId>u1</UploadId>
            <Initiator><ID>arn:aws:iam::1:user/x</ID></Initiator><Initiated>2024-01-01T00:00:00.000Z</Initiated></Upload>
          <Upload><Key>shows/b&amp;c.mp4</Key><UploadId>u2</UploadId><Initiated>2024-01-02T00:00:00.000Z</Initiated></Upload>
        </ListMultipartUploadsResult>
        """

    @Test("a multipart listing: its records, entities decoded, markers, and no tag taken for a longer one")
    func listing() {
        let xml = S3XML(Array(Self.listing.utf8))
        #expect(xml.rootName == "ListMultipartUploadsResult")
        let uploads = xml.records("Upload")
        #expect(uploads.map { $0.value("Key") } == ["shows/a.mp4", "shows/b&c.mp4"])
        #expect(uploads.map { $0.value("UploadId") } == ["u1", "u2"])
        #expect(xml.value("UploadId") == "u1", "<UploadIdMarker/> is not <UploadId>")
        #expect(xml.value("IsTruncated") == "true")
        #expect(xml.value("NextKeyMarker") == "shows/b&c.mp4")
        #expect(S3XML.decodeEntities("&lt;&#65;&#x42;&gt; &unknown;") == "<AB> &unknown;")
        #expect(S3XML.escape("\"etag\"&<") == "&quot;etag&quot;&amp;&lt;")
    }

    static func response(_ status: Int, _ code: String?, headers: [(String, String)] = []) -> HTTPResponse {
        let body = code.map { "<?xml version=\"1.0\"?><Error><Code>\($0)</Code><Message>said \($0)</Message></Error>" } ?? ""
        return HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    @Test("each answer maps to a stable code and only server trouble is retryable", arguments: [
        (503, "SlowDown", "service-unavailable", true), (500, "InternalError", "service-unavailable", true),
        (400, "RequestTimeout", "service-unavailable", true), (200, "InternalError", "service-unavailable", true),
        (404, "NoSuchKey", "not-found", false), (404, "NoSuchBucket", "no-such-bucket", false),
        (403, "AccessDenied", "access-denied", false), (403, "SignatureDoesNotMatch", "invalid-credentials", false),
        (403, "InvalidAccessKeyId", "invalid-credentials", false), (400, "ExpiredToken", "invalid-credentials", false),
        (412, "PreconditionFailed", "already-exists", false), (416, "InvalidRange", "invalid-range", false),
        (501, "NotImplemented", "not-implemented", false), (400, "InvalidArgument", "request-rejected", false),
    ])
    func mapping(status: Int, serviceCode: String, code: String, retryable: Bool) throws {
        let mapper = S3ErrorMapper(configuration: ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: "AKIA00000000000WXYZ", secretAccessKey: "sekrit")))
        let request = S3Request("GetObject", .get, bucket: "media", key: "in.mov")
        let error = mapper.error(for: Self.response(status, serviceCode), of: request)
        #expect(error.code.rawValue == code)
        #expect(error.isRetryable == retryable)
        #expect(error.serviceCode == serviceCode && error.httpStatus == status)
        #expect(error.message.contains("s3://media/in.mov"))
        #expect(!error.message.contains("sekrit"))
    }

    @Test("a bucket in another region says which, and what to set")
    func wrongRegion() {
        let mapper = S3ErrorMapper(configuration: ObjectStoreConfiguration(credentials: nil, region: "us-east-1"))
        let error = mapper.error(for: Self.response(301, "PermanentRedirect", headers: [("x-amz-bucket-region", "eu-central-1")]),
                                 of: S3Request("HeadBucket", .head, bucket: "media"))
        #expect(error.code == .wrongRegion)
        #expect(error.message.contains("AWS_REGION=eu-central-1"))
    }

    @Test("transport failures: stalls and broken connections are retryable, cancellation and bad URLs not")
    func transport() {
        let mapper = S3ErrorMapper(configuration: ObjectStoreConfiguration(credentials: nil, endpoint: "http://127.0.0.1:9"))
        let request = S3Request("PutObject", .put, bucket: "b12", key: "k")
        let cases: [(TransportFailure.Kind, ObjectStoreError.Code, Bool)] = [
            (.timeout, .timedOut, true), (.connection, .connectionFailed, true), (.cancelled, .cancelled, false),
            (.permanent, .connectionFailed, false),
        ]
        for (kind, code, retryable) in cases {
            let error = mapper.error(for: TransportFailure(kind: kind, curlCode: 7, message: "boom"), of: request)
            #expect(error.code == code && error.isRetryable == retryable, "\(kind)")
        }
    }
}
