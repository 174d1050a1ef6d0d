import CLibCrypto

/// SHA-256 (FIPS 180-4), computed by OpenSSL's libcrypto: every segment file as it is written and
/// read back, transfers' chunks, migration checksums (the recorded checksum equals what
/// `sha256sum Migrations/NNNN_name.sql` prints), submission fingerprints, and the HMACs of request
/// signing and webhooks (``HMACSHA256``). A value: a copy hashes on from where the original was.
///
///     SHA256.hexDigest(of: Array("abc".utf8))  // "ba7816bf…"
///     var hasher = SHA256(); hasher.update(part1); hasher.update(part2); hasher.finalize()
///
/// It was written in Swift until 2026-12-08, at 190 MB/s on this project's 2-core machine: the
/// package step of a 20 MB ladder spent 0.1 s checking its segments. libcrypto uses the CPU's
/// SHA extensions (1.7 GB/s there).
public struct SHA256: Sendable {
    private var context: DigestContext

    /// A hasher with nothing hashed yet.
    public init() {
        context = DigestContext()
    }

    /// The 32-byte digest of `bytes`.
    public static func digest(of bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `bytes` as 64 lowercase hex digits.
    public static func hexDigest(of bytes: some Sequence<UInt8>) -> String {
        hex(digest(of: bytes))
    }

    /// `bytes` as lowercase hex digits, two per byte.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Adds `bytes` to what is hashed.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            update(UnsafeRawBufferPointer(buffer))
        }
        guard done == nil else { return }
        var chunk: [UInt8] = []
        chunk.reserveCapacity(4096)
        for byte in bytes {
            chunk.append(byte)
            if chunk.count == 4096 {
                chunk.withUnsafeBytes { update($0) }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        chunk.withUnsafeBytes { update($0) }
    }

    /// Adds the bytes at `bytes` (a file's chunk, a packet) without copying them first.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        guard EVP_DigestUpdate(context.pointer, base, bytes.count) == 1 else {
            fatalError("libcrypto refused to hash \(bytes.count) bytes")
        }
    }

    /// The digest of everything added (the hasher is spent).
    public consuming func finalize() -> [UInt8] {
        if !isKnownUniquelyReferenced(&context) { context = DigestContext(copying: context) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context.pointer, &digest, &length) == 1, length == 32 else {
            fatalError("libcrypto could not finish a SHA-256 digest")
        }
        return digest
    }
}

/// One libcrypto digest context, owned by one ``SHA256`` value: a copy of the value that is then
/// changed gets a context of its own first (copy on write), so it is only ever used by one owner
/// at a time.
private final class DigestContext: @unchecked Sendable {
    let pointer: OpaquePointer

    init() {
        guard let context = EVP_MD_CTX_new() else { fatalError("libcrypto: out of memory for a digest") }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("libcrypto has no SHA-256 (EVP_sha256)")
        }
        pointer = context
    }

    init(copying other: DigestContext) {
        guard let context = EVP_MD_CTX_new() else { fatalError("libcrypto: out of memory for a digest") }
        guard EVP_MD_CTX_copy_ex(context, other.pointer) == 1 else { fatalError("libcrypto could not copy a digest") }
        pointer = context
    }

    deinit {
        EVP_MD_CTX_free(pointer)
    }
}
