import Synchronization

/// The storages this process reads and writes media in, by URL scheme: registered once, early
/// (`splice` does it when a command starts; tests once per process), consulted wherever a
/// location is opened. A location whose scheme names a storage that is not registered — an
/// `s3://` input in a process without object storage — is refused with a clear error rather
/// than handed to FFmpeg, which does not know the scheme.
public enum StorageRegistry {
    /// Schemes that mean storage, never something FFmpeg opens itself.
    public static let storageSchemes: Set<String> = ["s3"]

    private static let registered = Mutex<[String: any MediaStorage]>([:])

    /// Serves `storage.scheme` with `storage` from now on (replacing any earlier one).
    public static func register(_ storage: any MediaStorage) {
        registered.withLock { $0[storage.scheme.lowercased()] = storage }
    }

    /// The storage `location` lives in, nil for a path or a URL FFmpeg opens itself. Throws
    /// `invalid-settings` for a storage scheme nothing serves in this process.
    public static func storage(for location: String) throws(MediaError) -> (any MediaStorage)? {
        guard let scheme = scheme(of: location) else { return nil }
        if let storage = registered.withLock({ $0[scheme] }) { return storage }
        guard storageSchemes.contains(scheme) else { return nil }
        throw MediaError(.invalidSettings, "'\(location.prefix(300))' is in object storage, which this process is not "
                         + "set up to use; run it with AWS credentials (AWS_ACCESS_KEY_ID or AWS_PROFILE), or give a path")
    }

    /// Whether `location` is written as a storage location (`s3://…`), registered or not.
    public static func isStored(_ location: String) -> Bool {
        guard let scheme = scheme(of: location) else { return false }
        return storageSchemes.contains(scheme) || registered.withLock { $0[scheme] != nil }
    }

    /// The lowercased scheme of `SCHEME://…`, nil for anything else.
    static func scheme(of location: String) -> String? {
        guard let separator = location.range(of: "://") else { return nil }
        let scheme = location[..<separator.lowerBound]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
        return scheme.lowercased()
    }
}
