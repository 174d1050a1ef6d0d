import Foundation
import SpliceObjectStore
import Testing

/// `ObjectStoreConfiguration.fromEnvironment`: the AWS precedence rules over a HOME of its own.
@Suite("Configuration from AWS_* and ~/.aws, in the AWS tools' order")
struct EnvironmentConfigurationTests {
    /// The test process's HOMEs, removed when it ends.
    static let homes: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("aws-homes-\(getpid())")
        atexit {
            try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("aws-homes-\(getpid())"))
        }
        return url
    }()

    /// A fresh HOME with `~/.aws/config` and `~/.aws/credentials` holding `config` and `credentials`.
    static func home(config: String? = AWSConfigFileTests.config, credentials: String? = AWSConfigFileTests.credentials)
        throws -> String
    {
        let home = homes.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        if let config { try config.write(to: home.appendingPathComponent(".aws/config"), atomically: true, encoding: .utf8) }
        if let credentials {
            try credentials.write(to: home.appendingPathComponent(".aws/credentials"), atomically: true, encoding: .utf8)
        }
        return home.path
    }

    @Test("the default profile: keys from the credentials file, region from the config file, AWS itself")
    func defaultProfile() throws {
        let configuration = try ObjectStoreConfiguration.fromEnvironment(["HOME": try Self.home()])
        #expect(configuration.credentials?.accessKeyID == "AKIAIOSFODNN7EXAMPLE")
        #expect(configuration.region == "eu-west-1")
        #expect(configuration.endpoint == nil && configuration.isAWS)
        #expect(configuration.addressingStyle == .automatic)
    }

    @Test("environment keys win over the profile; the session token comes with them; regions in order")
    func environmentFirst() throws {
        let home = try Self.home()
        let configuration = try ObjectStoreConfiguration.fromEnvironment([
            "HOME": home, "AWS_ACCESS_KEY_ID": "AKIAENVIRONMENT00001", "AWS_SECRET_ACCESS_KEY": "env-secret",
            "AWS_SESSION_TOKEN": "env-token", "AWS_DEFAULT_REGION": "us-west-2", "AWS_PROFILE": "minio",
        ])
        #expect(configuration.credentials?.accessKeyID == "AKIAENVIRONMENT00001")
        #expect(configuration.credentials?.sessionToken == "env-token")
        #expect(configuration.region == "us-west-2")
        let both = try ObjectStoreConfiguration.fromEnvironment(["HOME": home, "AWS_REGION": "sa-east-1",
                                                                 "AWS_DEFAULT_REGION": "us-west-2"])
        #expect(both.region == "sa-east-1")
    }

    @Test("AWS_PROFILE selects keys, token, region, endpoint and path-style addressing of that profile")
    func namedProfile() throws {
        let configuration = try ObjectStoreConfiguration.fromEnvironment(["HOME": try Self.home(), "AWS_PROFILE": "minio"])
        #expect(configuration.credentials?.accessKeyID == "minioadmin")
        #expect(configuration.credentials?.sessionToken == "FwoGZXIvYXdzE")
        #expect(configuration.region == "us-east-1")
        // The services section's s3 endpoint is more specific than the profile's endpoint_url.
        #expect(configuration.endpoint == "http://minio.internal:9000")
        #expect(configuration.addressingStyle == .path)
    }

    @Test("endpoints: AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL over the files; ignoring them all on request")
    func endpoints() throws {
        let home = try Self.home()
        let base = ["HOME": home, "AWS_PROFILE": "minio"]
        #expect(try ObjectStoreConfiguration.fromEnvironment(base.merging(["AWS_ENDPOINT_URL": "http://general:1"]) { $1 })
            .endpoint == "http://general:1")
        #expect(try ObjectStoreConfiguration.fromEnvironment(base.merging(["AWS_ENDPOINT_URL": "http://general:1",
                                                                           "AWS_ENDPOINT_URL_S3": "http://s3only:2"]) { $1 })
            .endpoint == "http://s3only:2")
        #expect(try ObjectStoreConfiguration.fromEnvironment(base.merging(["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"]) { $1 })
            .endpoint == nil)
        #expect {
            _ = try ObjectStoreConfiguration.fromEnvironment(base.merging(["AWS_ENDPOINT_URL_S3": "minio:9000"]) { $1 })
        } throws: { ($0 as? ObjectStoreError)?.message.contains("not an http(s) URL") == true }
    }

    @Test("the file locations can be moved with AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE")
    func movedFiles() throws {
        let elsewhere = try Self.home()
        let configuration = try ObjectStoreConfiguration.fromEnvironment([
            "HOME": try Self.home(config: nil, credentials: nil),
            "AWS_CONFIG_FILE": elsewhere + "/.aws/config", "AWS_SHARED_CREDENTIALS_FILE": elsewhere + "/.aws/credentials",
        ])
        #expect(configuration.credentials?.accessKeyID == "AKIAIOSFODNN7EXAMPLE")
        #expect(configuration.region == "eu-west-1")
    }

    @Test("no files and no variables: unsigned requests to AWS in us-east-1")
    func nothing() throws {
        let configuration = try ObjectStoreConfiguration.fromEnvironment(["HOME": try Self.home(config: nil, credentials: nil)])
        #expect(configuration.credentials == nil)
        #expect(configuration.region == "us-east-1")
        #expect(configuration.description.contains("no credentials"))
    }

    @Test("clear errors: a missing named profile, half the key pair, an assume-role profile, a bad addressing style",
          arguments: [
              (["AWS_PROFILE": "nosuch"], "neither"), (["AWS_ACCESS_KEY_ID": "AKIA0000000000000000"], "AWS_SECRET_ACCESS_KEY"),
              (["AWS_PROFILE": "assumed"], "role_arn"), (["AWS_PROFILE": "styled"], "addressing_style"),
          ])
    func errors(environment: [String: String], mention: String) throws {
        let home = try Self.home(config: AWSConfigFileTests.config + "\n[profile styled]\ns3 =\n  addressing_style = sideways\n")
        #expect {
            _ = try ObjectStoreConfiguration.fromEnvironment(environment.merging(["HOME": home]) { $1 })
        } throws: { error in
            guard let error = error as? ObjectStoreError else { return false }
            return error.code == .invalidConfiguration && error.message.contains(mention)
        }
    }

    @Test("descriptions show where settings came from and the key's last four characters, never secrets")
    func redaction() throws {
        let configuration = try ObjectStoreConfiguration.fromEnvironment(["HOME": try Self.home(), "AWS_PROFILE": "minio"])
        let text = "\(configuration) \(configuration.credentials!)"
        #expect(text.contains("****dmin"))
        #expect(!text.contains("minio#not-a-comment") && !text.contains("FwoGZXIvYXdzE") && !text.contains("minioadmin"))
        #expect(text.contains("AWS_PROFILE=minio"))
    }
}
