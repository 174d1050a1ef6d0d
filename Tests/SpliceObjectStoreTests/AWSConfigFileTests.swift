import Testing
@testable import SpliceObjectStore

/// The two AWS shared files as people write them (and as `aws configure` writes them).
@Suite("AWS config and credentials files, read as botocore reads them")
struct AWSConfigFileTests {
    static let config = """
        # written by aws configure, then edited by hand
        [default]
        region = eu-west-1
        output = json

        [profile minio]
        region=us-east-1
        endpoint_url = http://127.0.0.1:9000
        s3 =
          addressing_style = path
          max_concurrent_requests = 20
        ; a comment between settings
        services = local-s3

        [profile  "spaced name" ]
        region: ap-southeast-2

        [services local-s3]
        s3 =
            endpoint_url = http://minio.internal:9000

        [profile assumed]
        role_arn = arn:aws:iam::123456789012:role/transcoder
        source_profile = default
        """

    static let credentials = """
        [default]
        aws_access_key_id = AKIAIOSFODNN7EXAMPLE
        aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY

        [minio]
        aws_access_key_id=minioadmin
        aws_secret_access_key=minio#not-a-comment
        aws_session_token = FwoGZXIvYXdzE
        \r
        """

    @Test("profiles, nested s3 blocks, services sections, comments and both separators")
    func config() throws {
        let file = try AWSConfigFile(parsing: Self.config, kind: .config, path: "~/.aws/config")
        #expect(file.profile("default")?.values["region"] == "eu-west-1")
        let minio = try #require(file.profile("minio"))
        #expect(minio.values["region"] == "us-east-1")
        #expect(minio.values["endpoint_url"] == "http://127.0.0.1:9000")
        #expect(minio.nested["s3"] == ["addressing_style": "path", "max_concurrent_requests": "20"])
        #expect(minio.values["services"] == "local-s3")
        #expect(file.services("local-s3")?.nested["s3"]?["endpoint_url"] == "http://minio.internal:9000")
        #expect(file.profile("spaced name")?.values["region"] == "ap-southeast-2")
        #expect(file.profile("assumed")?.values["role_arn"] != nil)
        #expect(file.profile("absent") == nil)
        #expect(file.profile("local-s3") == nil, "a services section is not a profile")
    }

    @Test("credentials sections are bare profile names; a # inside a value is part of it; CRLF tolerated")
    func credentials() throws {
        let file = try AWSConfigFile(parsing: Self.credentials, kind: .credentials, path: "~/.aws/credentials")
        #expect(file.profile("default")?.values["aws_access_key_id"] == "AKIAIOSFODNN7EXAMPLE")
        #expect(file.profile("minio")?.values["aws_secret_access_key"] == "minio#not-a-comment")
        #expect(file.profile("minio")?.values["aws_session_token"] == "FwoGZXIvYXdzE")
    }

    @Test("malformed files are refused with the file and line", arguments: [
        ("region = x\n[default]", "line 1", "before any [section]"),
        ("[default]\nregion eu-west-1", "line 2", "NAME = VALUE"),
        ("[default]\n[default]", "line 2", "appears twice"),
        ("[default\nregion = x", "line 1", "[NAME]"),
    ])
    func malformed(text: String, line: String, problem: String) {
        #expect {
            _ = try AWSConfigFile(parsing: text, kind: .config, path: "/home/u/.aws/config")
        } throws: { error in
            guard let error = error as? ObjectStoreError else { return false }
            return error.code == .invalidConfiguration && error.message.contains("/home/u/.aws/config \(line)")
                && error.message.contains(problem)
        }
    }
}
