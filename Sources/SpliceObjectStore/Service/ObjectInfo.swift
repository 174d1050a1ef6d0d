/// What HEAD says about an object: its size and version tag.
public struct ObjectInfo: Sendable, Hashable {
    /// Where it is.
    public let location: ObjectLocation
    /// Its length in bytes.
    public let size: Int64
    /// The service's entity tag (quotes removed): changes whenever the object is replaced.
    /// Readers send it back as `If-Match`, so an object replaced mid-read is noticed.
    public let etag: String?
    /// Its Content-Type, when the service reports one.
    public let contentType: String?

    /// An object's description from its parts.
    public init(location: ObjectLocation, size: Int64, etag: String?, contentType: String?) {
        self.location = location
        self.size = size
        self.etag = etag
        self.contentType = contentType
    }

    /// From a HEAD or GET answer's headers.
    init(location: ObjectLocation, response: HTTPResponse) {
        let length = response.header("content-range").flatMap { $0.split(separator: "/").last.flatMap { Int64($0) } }
            ?? response.header("content-length").flatMap { Int64($0) } ?? 0
        self.init(location: location, size: length, etag: response.header("etag").map(Self.unquoted),
                  contentType: response.header("content-type"))
    }

    static func unquoted(_ etag: String) -> String {
        etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"") ? String(etag.dropFirst().dropLast()) : etag
    }
}
