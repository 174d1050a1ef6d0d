public import Foundation

extension ObjectStoreConfiguration {
    /// Settings the way the AWS CLI and SDKs find them, first match wins:
    ///
    /// - **Credentials**: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
    ///   else the profile (`AWS_PROFILE`, else `default`) in `~/.aws/credentials`
    ///   (`AWS_SHARED_CREDENTIALS_FILE`), then in `~/.aws/config` (`AWS_CONFIG_FILE`).
    /// - **Region**: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, `us-east-1`.
    /// - **Endpoint**: `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the `s3` block of the
    ///   profile's `services` section, the profile's `endpoint_url`; none of these when
    ///   `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`. None: AWS S3 itself.
    /// - **Addressing**: the profile's `s3 = addressing_style = auto|path|virtual`.
    ///
    /// A profile named by `AWS_PROFILE` that is in neither file is an error, as is a profile
    /// whose credentials come from somewhere Splice cannot go (`role_arn`, `credential_process`,
    /// `sso_*`): the message says how to hand them over. No credentials at all is not an error
    /// here (public buckets need none); requests are then unsigned.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ObjectStoreError) -> ObjectStoreConfiguration {
        func env(_ name: String) -> String? {
            environment[name].flatMap { $0.trimmingSpaces().isEmpty ? nil : $0.trimmingSpaces() }
        }
        let home = env("HOME") ?? NSHomeDirectory()
        let configPath = env("AWS_CONFIG_FILE").map { expandTilde($0, home: home) } ?? home + "/.aws/config"
        let credentialsPath = env("AWS_SHARED_CREDENTIALS_FILE").map { expandTilde($0, home: home) }
            ?? home + "/.aws/credentials"
        let config = try readFile(configPath, kind: .config)
        let credentialsFile = try readFile(credentialsPath, kind: .credentials)

        let explicitProfile = env("AWS_PROFILE") ?? env("AWS_DEFAULT_PROFILE")
        let profileName = explicitProfile ?? "default"
        let profile = config?.profile(profileName)
        let credentialsProfile = credentialsFile?.profile(profileName)
        if let explicitProfile, profile == nil, credentialsProfile == nil {
            throw ObjectStoreError(.invalidConfiguration, "AWS_PROFILE names profile \"\(explicitProfile)\", which is in "
                + "neither \(configPath) nor \(credentialsPath); add it ([profile \(explicitProfile)] in the config file, "
                + "[\(explicitProfile)] in the credentials file) or unset AWS_PROFILE")
        }

        // Credentials.
        var credentials: ObjectStoreCredentials?
        if (env("AWS_ACCESS_KEY_ID") == nil) != (env("AWS_SECRET_ACCESS_KEY") == nil) {
            let missing = env("AWS_ACCESS_KEY_ID") == nil ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY"
            throw ObjectStoreError(.invalidConfiguration, "partial credentials in the environment: \(missing) is not "
                + "set; set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
        }
        if let key = env("AWS_ACCESS_KEY_ID"), let secret = env("AWS_SECRET_ACCESS_KEY") {
            credentials = ObjectStoreCredentials(accessKeyID: key, secretAccessKey: secret,
                                                 sessionToken: env("AWS_SESSION_TOKEN") ?? env("AWS_SECURITY_TOKEN"),
                                                 source: "the environment (AWS_ACCESS_KEY_ID)")
        } else if let found = keys(in: credentialsProfile, source: "profile \(profileName) in \(credentialsPath)") {
            credentials = found
        } else if let found = keys(in: profile, source: "profile \(profileName) in \(configPath)") {
            credentials = found
        } else if let profile, let indirect = ["role_arn", "credential_process", "sso_session", "sso_start_url",
                                                "web_identity_token_file"].first(where: { profile.values[$0] != nil }) {
            throw ObjectStoreError(.invalidConfiguration, "profile \(profileName) in \(configPath) gets its credentials "
                + "through \(indirect), which Splice does not follow; export them instead, e.g. "
                + "eval \"$(aws configure export-credentials --profile \(profileName) --format env)\"")
        }

        // Region.
        let region = env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? profile?.values["region"] ?? "us-east-1"

        // Endpoint.
        let ignoreConfigured = (env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
            ?? profile?.values["ignore_configured_endpoint_urls"])?.lowercased() == "true"
        var endpoint: String?
        if !ignoreConfigured {
            let services = profile?.values["services"].flatMap { config?.services($0) }
            endpoint = env("AWS_ENDPOINT_URL_S3") ?? env("AWS_ENDPOINT_URL") ?? services?.nested["s3"]?["endpoint_url"]
                ?? profile?.values["endpoint_url"]
        }

        // Addressing style.
        var addressing = AddressingStyle.automatic
        if let style = profile?.nested["s3"]?["addressing_style"] {
            guard let parsed = AddressingStyle(rawValue: style.lowercased()) else {
                throw ObjectStoreError(.invalidConfiguration, "profile \(profileName) in \(configPath): addressing_style "
                    + "\"\(style)\" is not one of auto, path, virtual")
            }
            addressing = parsed
        }

        var origin = explicitProfile.map { "AWS_PROFILE=\($0)" } ?? "profile default"
        if profile == nil && credentialsProfile == nil { origin = "the environment" }
        let configuration = ObjectStoreConfiguration(credentials: credentials, region: region, endpoint: endpoint,
                                                     addressingStyle: addressing, origin: origin)
        return try configuration.validated()
    }

    /// The key pair of `section`, when it has both halves.
    private static func keys(in section: AWSConfigFile.Section?, source: String) -> ObjectStoreCredentials? {
        guard let values = section?.values, let key = values["aws_access_key_id"], !key.isEmpty,
              let secret = values["aws_secret_access_key"], !secret.isEmpty else { return nil }
        return ObjectStoreCredentials(accessKeyID: key, secretAccessKey: secret,
                                      sessionToken: values["aws_session_token"] ?? values["aws_security_token"],
                                      source: source)
    }

    /// The parsed file at `path`, nil when there is none.
    private static func readFile(_ path: String, kind: AWSConfigFile.Kind) throws(ObjectStoreError) -> AWSConfigFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ObjectStoreError(.invalidConfiguration, "cannot read \(path); check its permissions")
        }
        return try AWSConfigFile(parsing: String(decoding: data, as: UTF8.self), kind: kind, path: path)
    }

    private static func expandTilde(_ path: String, home: String) -> String {
        path == "~" ? home : path.hasPrefix("~/") ? home + path.dropFirst() : path
    }
}
