/// A multipart upload that was started and neither completed nor aborted: its parts cost
/// storage until it is aborted (``ObjectStore/abortMultipartUpload(_:)``).
public struct MultipartUploadInfo: Sendable, Hashable {
    /// The object it would create.
    public let location: ObjectLocation
    /// The service's id for it.
    public let uploadID: String
    /// When it was started, as the service wrote it (ISO 8601).
    public let initiated: String?

    /// An upload's description from its parts.
    public init(location: ObjectLocation, uploadID: String, initiated: String?) {
        self.location = location
        self.uploadID = uploadID
        self.initiated = initiated
    }
}
