public import Foundation
public import SpliceCore

/// The bulk-data protocol (`splice-data` 1) spoken on the coordinator's data endpoint, apart from
/// the worker endpoint so heartbeats and ASSIGNs never queue behind megabytes.
///
/// zguide's file-transfer pattern, both ways: the side that wants a file asks for it chunk by
/// chunk (`FETCH`, a byte range), with at most a fixed number of chunks in flight, and the side
/// that offers it answers each with a `CHUNK` (the envelope, then the bytes as a second frame) or
/// `MISSING`. The receiver sets the pace and bounds its memory; a chunk lost to a reconnection is
/// simply asked for again. Every message is one JSON envelope frame, as on the other endpoints;
/// only `CHUNK` has a second frame, its payload. See docs/protocol.md, The data endpoint.
public enum DataMessage: WireMessage, Hashable {
    case fetch(Fetch)
    case chunk(Chunk)
    case missing(Missing)

    public static let protocolName = "splice-data"
    public static let protocolVersion = 1
    public static let catalogue = MessageCatalogue<DataMessage>([
        .body(Fetch.self, DataMessage.fetch),
        .body(Chunk.self, DataMessage.chunk),
        .body(Missing.self, DataMessage.missing),
    ])

    public var body: any MessageBody {
        switch self {
        case .fetch(let body): body
        case .chunk(let body): body
        case .missing(let body): body
        }
    }
}

/// The name under which one side offers a file: 1…128 characters of `A–Z a–z 0–9 . _ -`, chosen
/// by the side that offers it (an attempt's lease token, say). Anything else is refused at decode.
public struct TransferFileID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ text: String) {
        guard (1...128).contains(text.utf8.count), text.utf8.allSatisfy(Self.allowed) else { return nil }
        rawValue = text
    }

    private static func allowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = TransferFileID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a file id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Asks for bytes `[offset, offset + length)` of `file`. `session` names one fetch (fresh for
/// each): the answers echo it, so answers to an earlier, abandoned fetch of the same file are
/// told apart and ignored.
public struct Fetch: MessageBody, Hashable {
    public static let messageType = "FETCH"
    public var file: TransferFileID
    public var offset: Int64
    public var length: Int
    public var session: Int

    public init(file: TransferFileID, offset: Int64, length: Int, session: Int) {
        self.file = file
        self.offset = offset
        self.length = length
        self.session = session
    }

    public func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("offset", offset, WireLimits.bytes),
            WireLimits.check("length", length, WireLimits.chunkBytes),
            WireLimits.check("session", session, WireLimits.transferSession))
    }
}

/// Bytes `[offset, offset + length)` of `file`, whose whole size is `fileSize`; the bytes travel
/// as the message's second frame (exactly `length` of them). Shorter than asked only at the end
/// of the file.
public struct Chunk: MessageBody, Hashable {
    public static let messageType = "CHUNK"
    public var file: TransferFileID
    public var offset: Int64
    public var length: Int
    public var fileSize: Int64
    /// The FETCH's session.
    public var session: Int

    public init(file: TransferFileID, offset: Int64, length: Int, fileSize: Int64, session: Int) {
        self.file = file
        self.offset = offset
        self.length = length
        self.fileSize = fileSize
        self.session = session
    }

    public func rangeViolation() -> String? {
        WireLimits.first(
            WireLimits.check("offset", offset, WireLimits.bytes),
            WireLimits.check("length", length, 0...WireLimits.chunkBytes.upperBound),
            WireLimits.check("fileSize", fileSize, WireLimits.bytes),
            WireLimits.check("session", session, WireLimits.transferSession))
    }
}

/// A file offered on the data endpoint: its name there, its size and SHA-256, which the side
/// that fetches it checks before using it. The coordinator sends one in each ASSIGN to a
/// transfer-mode worker (`Assign.excerpt`, the segment's source excerpt); a worker's result needs
/// none, since its COMPLETE carries the size and SHA-256 and the coordinator fetches it from the
/// worker's route. Not a message of its own: nothing on the data endpoint announces files.
public struct Offer: Codable, Sendable, Hashable {
    public var file: TransferFileID
    public var size: Int64
    public var checksum: SHA256Digest

    public init(file: TransferFileID, size: Int64, checksum: SHA256Digest) {
        self.file = file
        self.size = size
        self.checksum = checksum
    }

    func rangeViolation() -> String? {
        WireLimits.check("size", size, WireLimits.bytes)
    }
}

/// `file` is not offered (never was, was withdrawn, or can no longer be read): `reason` says which.
public struct Missing: MessageBody, Hashable {
    public static let messageType = "MISSING"
    public var file: TransferFileID
    public var reason: String
    /// The FETCH's session.
    public var session: Int

    public init(file: TransferFileID, reason: String, session: Int) {
        self.file = file
        self.reason = reason
        self.session = session
    }

    public func rangeViolation() -> String? {
        WireLimits.check("session", session, WireLimits.transferSession)
    }
}
