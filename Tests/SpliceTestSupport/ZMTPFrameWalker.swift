/// Walks one direction of a ZMTP 3 connection (the 64-byte greeting, then frames: a flags byte,
/// a 1- or 8-byte big-endian size, the body) and reports where frame bodies lie in each buffer
/// read from the socket, so a proxy can damage or hold back the bytes of one chosen frame.
/// Without CURVE the bodies are the messages' bytes as sent (`splice-data` CHUNK payloads among them).
public struct ZMTPFrameWalker: Sendable {
    /// A stretch of one frame's body inside a buffer.
    public struct BodyPart: Sendable, Hashable {
        /// Where it lies in the buffer.
        public var range: Range<Int>
        /// The offset within the body of `range.lowerBound`.
        public var bodyOffset: Int64
        /// The whole body's size.
        public var bodySize: Int64
        /// Which body this is, counted from 0 over the direction (commands and messages alike).
        public var frame: Int
    }

    private var greetingLeft = 64
    /// The flags and size bytes of the frame being read, until they are complete.
    private var header: [UInt8] = []
    private var bodySize: Int64 = 0
    private var bodyOffset: Int64 = 0
    private var inBody = false
    private var frames = 0

    public init() {}

    /// The body parts in `count` bytes that follow what was walked so far.
    public mutating func walk(_ buffer: UnsafeBufferPointer<UInt8>) -> [BodyPart] {
        var parts: [BodyPart] = []
        var index = 0
        while index < buffer.count {
            if greetingLeft > 0 {
                let skipped = min(greetingLeft, buffer.count - index)
                greetingLeft -= skipped
                index += skipped
                continue
            }
            if inBody {
                let length = Int(min(Int64(buffer.count - index), bodySize - bodyOffset))
                parts.append(BodyPart(range: index..<(index + length), bodyOffset: bodyOffset, bodySize: bodySize,
                                      frame: frames))
                index += length
                bodyOffset += Int64(length)
                if bodyOffset == bodySize { endBody() }
                continue
            }
            header.append(buffer[index])
            index += 1
            let long = header[0] & 0x02 != 0
            guard header.count == (long ? 9 : 2) else { continue }
            bodySize = header.dropFirst().reduce(Int64(0)) { $0 << 8 | Int64($1) }
            header = []
            bodyOffset = 0
            inBody = true
            if bodySize == 0 { endBody() }
        }
        return parts
    }

    private mutating func endBody() {
        inBody = false
        frames += 1
    }
}
