/// One rendition of an adaptive-bitrate ladder: a picture size and a capped bit rate. Every
/// rung is encoded with an average bit rate, a max rate and a VBV buffer, so the peak a player
/// sees stays near what the master playlist's BANDWIDTH promises.
public struct LadderRung: Sendable, Codable, Hashable, CustomStringConvertible {
    /// Output width; nil keeps the source's aspect at ``height``.
    public var width: Int?
    public var height: Int
    /// Average bit rate, bits per second.
    public var bitrate: Int
    /// VBV max rate, bits per second.
    public var maxBitrate: Int
    /// VBV buffer, bits.
    public var bufferSize: Int

    public init(width: Int?, height: Int, bitrate: Int, maxBitrate: Int? = nil, bufferSize: Int? = nil) {
        self.width = width
        self.height = height
        self.bitrate = bitrate
        self.maxBitrate = maxBitrate ?? LadderRung.defaultMaxBitrate(for: bitrate)
        self.bufferSize = bufferSize ?? LadderRung.defaultBufferSize(for: bitrate)
    }

    /// Max rate for an average rate: 110 % (Apple's authoring specification asks that a VOD
    /// stream's peak stay within 110 % of its BANDWIDTH when BANDWIDTH is the average; ours is
    /// measured, so the cap keeps the two close).
    static func defaultMaxBitrate(for bitrate: Int) -> Int { bitrate + bitrate / 10 }

    /// Buffer for an average rate: two seconds' worth, so no six-second segment can hold much more
    /// than its share.
    static func defaultBufferSize(for bitrate: Int) -> Int { bitrate * 2 }

    public var description: String {
        let size = width.map { "\($0)x\(height)" } ?? "\(height)p"
        return "\(size)@\(LadderRung.format(bitrate))"
    }

    /// "3M", "365k", "1500k".
    static func format(_ rate: Int) -> String {
        if rate % 1_000_000 == 0 { return "\(rate / 1_000_000)M" }
        if rate % 1000 == 0 { return "\(rate / 1000)k" }
        return "\(rate)"
    }

    /// Parses `WxH@RATE` (`1280x720@3M`, `640x360@800k`) or `Hp@RATE` (`720p@3M`: width from the
    /// source's aspect).
    public init(parsing text: String) throws(SettingsError) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        let wrong = SettingsError(field: "ladder", value: text, allowed: "rungs like 1280x720@3M or 720p@3M, comma-separated, or auto")
        guard parts.count == 2, let rate = LadderRung.parseRate(String(parts[1])) else { throw wrong }
        let size = parts[0].lowercased()
        if size.hasSuffix("p"), let h = Int(size.dropLast()) {
            self.init(width: nil, height: h, bitrate: rate)
        } else {
            let dims = size.split(separator: "x", omittingEmptySubsequences: false)
            guard dims.count == 2, let w = Int(dims[0]), let h = Int(dims[1]) else { throw wrong }
            self.init(width: w, height: h, bitrate: rate)
        }
        guard (16...16384).contains(height), width.map({ (16...16384).contains($0) }) ?? true,
              (10_000...2_000_000_000).contains(bitrate) else {
            throw SettingsError(field: "ladder", value: text,
                                allowed: "sizes from 16 to 16384 pixels and rates from 10k to 2000M")
        }
    }

    /// "3M" → 3 000 000, "800k" → 800 000, "1.5M" → 1 500 000, "64000" → 64 000.
    static func parseRate(_ text: String) -> Int? {
        let lower = text.lowercased()
        let (digits, scale): (Substring, Int) = lower.hasSuffix("m") ? (lower.dropLast(), 1_000_000)
            : lower.hasSuffix("k") ? (lower.dropLast(), 1000) : (Substring(lower), 1)
        let pieces = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(pieces.count), let whole = Int(pieces[0]) else { return nil }
        var value = whole * scale
        if pieces.count == 2 {
            guard let fraction = Int(pieces[1]), !pieces[1].isEmpty, pieces[1].count <= 6 else { return nil }
            var divisor = 1
            for _ in 0..<pieces[1].count { divisor *= 10 }
            value += fraction * scale / divisor
        }
        return value > 0 ? value : nil
    }

    /// The H.264 ladder of Apple's HLS authoring specification (16:9, 30 fps family; one rung
    /// per height, the higher of its rates), highest first.
    public static let appleReference: [LadderRung] = [
        LadderRung(width: nil, height: 1080, bitrate: 6_000_000),
        LadderRung(width: nil, height: 720, bitrate: 3_000_000),
        LadderRung(width: nil, height: 540, bitrate: 2_000_000),
        LadderRung(width: nil, height: 432, bitrate: 1_100_000),
        LadderRung(width: nil, height: 360, bitrate: 365_000),
        LadderRung(width: nil, height: 234, bitrate: 145_000),
    ]

    /// `--ladder auto`: the reference rungs at or below the source's upright height (the source's
    /// own height when it is below the smallest rung), the aspect kept.
    public static func automatic(sourceHeight: Int) -> [LadderRung] {
        let fitting = appleReference.filter { $0.height <= sourceHeight }
        return fitting.isEmpty ? [LadderRung(width: nil, height: sourceHeight - sourceHeight % 2, bitrate: 145_000)] : fitting
    }
}
