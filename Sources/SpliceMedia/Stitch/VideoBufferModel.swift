/// The decoder buffer a peak rate promises (`--max-bitrate`, `--buffer-size`): filled at the peak
/// rate up to its size, each picture taken out whole at its decode time. The stitcher runs the
/// stitched video through it, so a file that breaks the promise is reported (see ``RateControl``
/// for why segments keep it).
///
/// Exact: the level is kept in bit·microseconds per second (bits × 10⁶) and time in microseconds.
struct VideoBufferModel: Sendable, Hashable {
    let maxBitrate: Int64
    let bufferSize: Int64
    /// Bits × 10⁶.
    private var level: Int64
    private var lastTime: MediaTime?
    /// The lowest level reached, as per mille of the buffer, just after a picture was taken out
    /// (negative: the buffer ran dry).
    private(set) var lowestPermille: Int64
    /// When the buffer first ran dry (the picture's decode time), if it did.
    private(set) var firstUnderflow: MediaTime?

    /// A buffer that starts `initialPercent` full when the first picture is due.
    init(maxBitrate: Int, bufferSize: Int, initialPercent: Int) {
        self.maxBitrate = Int64(maxBitrate)
        self.bufferSize = Int64(max(1, bufferSize))
        level = Int64(max(1, bufferSize)) * 10_000 * Int64(initialPercent)
        lowestPermille = Int64(initialPercent) * 10
    }

    /// Takes out a picture of `bytes` due at `time` (its decode time; times never go back).
    mutating func takeOut(bytes: Int, at time: MediaTime) {
        if let lastTime, time > lastTime {
            let micros = (time - lastTime).converted(to: 1_000_000, rounding: .nearest).value
            let room = bufferSize * 1_000_000 - level
            // A long enough wait fills it (and the product below cannot overflow).
            level = micros > room / max(1, maxBitrate) ? bufferSize * 1_000_000 : level + maxBitrate * micros
        }
        lastTime = time
        level -= Int64(bytes) * 8 * 1_000_000
        let permille = level >= 0 ? level / bufferSize / 1000 : -((-level + bufferSize * 1000 - 1) / (bufferSize * 1000))
        lowestPermille = min(lowestPermille, permille)
        if level < 0 && firstUnderflow == nil { firstUnderflow = time }
    }
}
