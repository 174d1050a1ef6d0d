import Testing
@testable import SpliceObjectStore

/// Where requests go and how keys are written into them: the bytes libcurl signs.
@Suite("Endpoints, addressing and SigV4 URI encoding")
struct S3EndpointTests {
    static func endpoint(_ url: String? = nil, region: String = "eu-west-1",
                         style: ObjectStoreConfiguration.AddressingStyle = .automatic) throws -> S3Endpoint {
        try S3Endpoint(configuration: ObjectStoreConfiguration(credentials: nil, region: region, endpoint: url,
                                                               addressingStyle: style))
    }

    @Test("AWS: virtual-hosted on the regional endpoint; dotted buckets path-style; China's suffix")
    func aws() throws {
        let aws = try Self.endpoint()
        #expect(aws.url(bucket: "media", key: "a/b.mp4") == "https://media.s3.eu-west-1.amazonaws.com/a/b.mp4")
        #expect(aws.url(bucket: "my.dotted.bucket", key: "k") == "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/k")
        #expect(try Self.endpoint(style: .path).url(bucket: "media", key: "k") == "https://s3.eu-west-1.amazonaws.com/media/k")
        #expect(try Self.endpoint(region: "cn-north-1").hostHeader(bucket: "m") == "m.s3.cn-north-1.amazonaws.com.cn")
    }

    @Test("custom endpoints: path-style unless told, default ports dropped, a base path kept, IPv6 bracketed")
    func custom() throws {
        let minio = try Self.endpoint("http://127.0.0.1:9000")
        #expect(minio.url(bucket: "media", key: "k.mp4") == "http://127.0.0.1:9000/media/k.mp4")
        #expect(minio.hostHeader(bucket: "media") == "127.0.0.1:9000")
        #expect(try Self.endpoint("https://r2.example.com:443/", style: .virtualHosted).url(bucket: "m", key: "k")
            == "https://m.r2.example.com/k")
        #expect(try Self.endpoint("http://proxy.local/s3/").url(bucket: "m", key: "k") == "http://proxy.local/s3/m/k")
        #expect(try Self.endpoint("http://[::1]:9000").url(bucket: "m", key: "k") == "http://[::1]:9000/m/k")
        #expect(minio.url(bucket: "m", key: "") == "http://127.0.0.1:9000/m")
        for bad in ["ftp://host", "http://user:pw@host", "host:9000", "http://host/?q=1"] {
            #expect(throws: ObjectStoreError.self, "\(bad)") { _ = try Self.endpoint(bad) }
        }
    }

    @Test("keys are encoded byte by byte as SigV4 canonicalises them; / is kept, nothing is normalised")
    func encoding() throws {
        let minio = try Self.endpoint("http://h:1")
        #expect(minio.path(bucket: "b", key: "with space/and+plus=eq&amp;~_.-") == "/b/with%20space/and%2Bplus%3Deq%26amp%3B~_.-")
        #expect(minio.path(bucket: "b", key: "ünï/日本") == "/b/%C3%BCn%C3%AF/%E6%97%A5%E6%9C%AC")
        #expect(minio.path(bucket: "b", key: "a/../b//c/./") == "/b/a/../b//c/./")
        #expect(minio.path(bucket: "b", key: "q?x#y%20") == "/b/q%3Fx%23y%2520")
    }

    @Test("the query is canonical: encoded, sorted by name then value, `name=` for empty values")
    func query() {
        #expect(S3Endpoint.canonicalQuery([("uploads", "")]) == "uploads=")
        #expect(S3Endpoint.canonicalQuery([("uploadId", "a/b+c"), ("partNumber", "10")]) == "partNumber=10&uploadId=a%2Fb%2Bc")
        #expect(S3Endpoint.canonicalQuery([("prefix", "x y"), ("key-marker", "k"), ("uploads", "")])
            == "key-marker=k&prefix=x%20y&uploads=")
    }
}
