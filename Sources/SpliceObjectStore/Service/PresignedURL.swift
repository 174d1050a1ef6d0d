/// A URL that lets any HTTP client GET one object until it expires, with no credentials of
/// its own: what FFmpeg's http reader is given. Its `description` hides the signature (the
/// URL is a bearer token until then); use ``url`` where it must be handed over.
public struct PresignedURL: Sendable, Hashable, CustomStringConvertible {
    /// The full URL, signature included.
    public let url: String
    /// The object it reads.
    public let location: ObjectLocation

    public var description: String {
        guard let query = url.firstIndex(of: "?") else { return url }
        return String(url[..<query]) + "?<presigned>"
    }
}
