/// An access key the way AWS issues them: the key id, its secret, and for temporary credentials
/// (STS, SSO, an assumed role) a session token.
///
/// `description` (and so every log line and error that interpolates it) shows the key id's last
/// four characters and where the credentials came from, never the secret or the token.
public struct ObjectStoreCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The access key id (`AKIA…`, `ASIA…` for temporary keys).
    public let accessKeyID: String
    /// The secret access key. Never logged.
    public let secretAccessKey: String
    /// The session token of temporary credentials. Never logged.
    public let sessionToken: String?
    /// Where they were found (`environment`, `profile default in ~/.aws/credentials`…), for messages.
    public let source: String

    /// Credentials from their parts; `source` says where they came from, for messages.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, source: String = "given") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
        self.source = source
    }

    /// The key id with all but its last four characters masked, as `aws configure list` shows it.
    public var maskedAccessKeyID: String {
        accessKeyID.count <= 4 ? "****" : "****" + accessKeyID.suffix(4)
    }

    public var description: String {
        "access key \(maskedAccessKeyID)\(sessionToken == nil ? "" : " with session token") from \(source)"
    }
}
