/// SHA-256 (FIPS 180-4): migration checksums (the recorded checksum equals what
/// `sha256sum Migrations/NNNN_name.sql` prints) and request signing for object storage
/// (SigV4 hashes canonical requests and keys its HMACs with it). Foundation on Linux has no
/// digest API; these inputs are small, so a plain implementation is enough.
///
///     SHA256.hexDigest(of: Array("abc".utf8))  // "ba7816bf…"
///     var hasher = SHA256(); hasher.update(part1); hasher.update(part2); hasher.finalize()
public struct SHA256: Sendable {
    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    /// Bytes not yet hashed (fewer than one 64-byte block).
    private var pending: [UInt8] = []
    private var byteCount: UInt64 = 0

    /// A hasher with nothing hashed yet.
    public init() {
        pending.reserveCapacity(64)
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
            var index = 0
            // Fill the pending block first, then whole blocks straight from the buffer.
            while !pending.isEmpty, index < buffer.count {
                pending.append(buffer[index])
                index += 1
                if pending.count == 64 {
                    compress(pending)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            if let base = buffer.baseAddress {
                while buffer.count - index >= 64 {
                    compress(UnsafeRawPointer(base + index))
                    index += 64
                }
            }
            pending.append(contentsOf: buffer[index...])
            byteCount &+= UInt64(buffer.count)
        }
        guard done == nil else { return }
        for byte in bytes {
            pending.append(byte)
            byteCount &+= 1
            if pending.count == 64 {
                compress(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Adds the bytes at `bytes` (a file's chunk, a packet) without copying them first.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        update(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    /// The digest of everything added (the hasher is spent).
    public consuming func finalize() -> [UInt8] {
        let bitLength = byteCount &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> shift)) }
        for start in stride(from: 0, to: tail.count, by: 64) { compress(tail[start..<(start + 64)]) }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in state {
            for shift in stride(from: 24, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        return digest
    }

    // MARK: - The compression function

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// Folds one 64-byte block into the state.
    private mutating func compress(_ block: some Collection<UInt8>) {
        if let done = block.withContiguousStorageIfAvailable({ buffer in
            compress(UnsafeRawBufferPointer(buffer).baseAddress!)
        }) {
            return done
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { copy in
            _ = copy.initialize(from: block)
            compress(UnsafeRawPointer(copy.baseAddress!))
        }
    }

    /// Folds the 64 bytes at `block` into the state: the words are read in place, big-endian.
    private mutating func compress(_ block: UnsafeRawPointer) {
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
            }
            for i in 16..<64 {
                let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            Self.k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[i] &+ w[i]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ s0 &+ majority)
                }
            }
        }
        state.withUnsafeMutableBufferPointer { state in
            state[0] &+= a
            state[1] &+= b
            state[2] &+= c
            state[3] &+= d
            state[4] &+= e
            state[5] &+= f
            state[6] &+= g
            state[7] &+= h
        }
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}
