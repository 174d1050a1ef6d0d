/// Where an object lives: a bucket and a key, written `s3://BUCKET/KEY` wherever Splice takes a
/// path. The key may be empty (`s3://bucket` or `s3://bucket/`): that names the bucket itself or,
/// as a root, every key under it; ``prefix`` roots (`s3://bucket/shows/`) confine to keys below.
///
///     let output = try ObjectLocation(parsing: "s3://media/show/master.m3u8")
///     output.bucket                        // "media"
///     output.key                           // "show/master.m3u8"
///     output.sibling("show-720p/index.m3u8") // s3://media/show/show-720p/index.m3u8
///
/// Parsing refuses what no S3 service would accept (bucket names outside 3–63 lowercase letters,
/// digits, dots and hyphens; keys over 1,024 UTF-8 bytes or with control characters), with an
/// error that quotes the text and says what is wrong.
public struct ObjectLocation: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The URL scheme, `s3`.
    public static let scheme = "s3"

    /// The bucket's name.
    public let bucket: String
    /// The object's key: any UTF-8 text, `/` separating folders by convention only. Empty for a bucket.
    public let key: String

    /// A location from its parts, checked as ``init(parsing:)`` checks them.
    public init(bucket: String, key: String) throws(ObjectStoreError) {
        if let problem = Self.bucketProblem(bucket) {
            throw ObjectStoreError(.invalidLocation, "s3://\(bucket)/\(key): \(problem)")
        }
        if let problem = Self.keyProblem(key) {
            throw ObjectStoreError(.invalidLocation, "s3://\(bucket)/\(key): \(problem)")
        }
        self.bucket = bucket
        self.key = key
    }

    /// Parses `s3://BUCKET/KEY` (`s3://BUCKET` for the bucket itself). The key is taken as
    /// written: no percent-decoding, `..` and `//` kept (S3 keys are names, not paths).
    public init(parsing text: String) throws(ObjectStoreError) {
        guard Self.isObjectURL(text) else {
            throw ObjectStoreError(.invalidLocation, "\(text) is not an object location: write s3://BUCKET/KEY")
        }
        let rest = text.dropFirst(Self.scheme.count + 3)
        let bucket = rest.prefix { $0 != "/" }
        let key = rest.dropFirst(bucket.count).dropFirst()
        try self.init(bucket: String(bucket), key: String(key))
    }

    /// Whether `text` is written as an object location (starts with `s3://`, any case of the
    /// scheme), as opposed to a local path or an http(s) URL. Says nothing about validity.
    public static func isObjectURL(_ text: String) -> Bool {
        text.count > Self.scheme.count + 3 && text.prefix(Self.scheme.count + 3).lowercased() == Self.scheme + "://"
    }

    /// `s3://BUCKET/KEY`.
    public var description: String { "s3://\(bucket)/\(key)" }

    /// Whether this names a bucket (or a bucket root) rather than an object.
    public var isBucket: Bool { key.isEmpty }

    /// The last `/`-separated part of the key (`master.m3u8`), empty for a bucket.
    public var name: String {
        String(key.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
    }

    /// The key up to and including its last `/` (`show/` for `show/master.m3u8`), empty at the top.
    public var folder: String {
        guard let slash = key.lastIndex(of: "/") else { return "" }
        return String(key[...slash])
    }

    /// The location of `relativeKey` in the same folder as this object: what a file beside it
    /// on disk would be (renditions beside a master playlist).
    public func sibling(_ relativeKey: String) throws(ObjectStoreError) -> ObjectLocation {
        try ObjectLocation(bucket: bucket, key: folder + relativeKey)
    }

    /// The location of `relativeKey` below this one, treated as a folder (a `/` is put between
    /// them unless the key is empty or already ends with one).
    public func appending(_ relativeKey: String) throws(ObjectStoreError) -> ObjectLocation {
        let separator = key.isEmpty || key.hasSuffix("/") ? "" : "/"
        return try ObjectLocation(bucket: bucket, key: key + separator + relativeKey)
    }

    /// Whether this location is `root` or below it: the same bucket, and a key that starts with
    /// the root's key taken as a folder (`s3://b/shows` contains `s3://b/shows/x.mp4`, not
    /// `s3://b/showsextra.mp4`). What `--output-root s3://bucket/prefix` checks.
    public func isWithin(_ root: ObjectLocation) -> Bool {
        guard bucket == root.bucket else { return false }
        if root.key.isEmpty || key == root.key { return true }
        let folder = root.key.hasSuffix("/") ? root.key : root.key + "/"
        return key.hasPrefix(folder)
    }

    public static func < (lhs: ObjectLocation, rhs: ObjectLocation) -> Bool {
        (lhs.bucket, lhs.key) < (rhs.bucket, rhs.key)
    }

    // MARK: - Rules

    /// What is wrong with `bucket` as a bucket name (S3's general-purpose bucket rules), or nil.
    static func bucketProblem(_ bucket: String) -> String? {
        let bytes = Array(bucket.utf8)
        guard (3...63).contains(bytes.count) else {
            return "a bucket name has 3 to 63 characters, \"\(bucket)\" has \(bucket.count)"
        }
        let allowed = bytes.allSatisfy { isLowercaseLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
        guard allowed else {
            return "a bucket name has only lowercase letters, digits, dots and hyphens"
        }
        guard isLowercaseLetterOrDigit(bytes.first!), isLowercaseLetterOrDigit(bytes.last!) else {
            return "a bucket name starts and ends with a lowercase letter or a digit"
        }
        guard !bucket.contains("..") else { return "a bucket name has no two dots in a row" }
        let labels = bucket.split(separator: ".")
        if labels.count == 4, labels.allSatisfy({ UInt8($0) != nil }) {
            return "a bucket name is not an IP address"
        }
        return nil
    }

    /// What is wrong with `key` as an object key, or nil.
    static func keyProblem(_ key: String) -> String? {
        if key.utf8.count > 1024 { return "a key has at most 1,024 UTF-8 bytes, this one has \(key.utf8.count)" }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "a key has no control characters (line breaks, tabs, NUL)"
        }
        return nil
    }

    private static func isLowercaseLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
