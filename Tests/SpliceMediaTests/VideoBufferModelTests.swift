import Testing
@testable import SpliceMedia

/// The decoder buffer the stitcher checks a peak rate's promise with (`VideoBufferModel`).
@Suite("Peak-rate buffer model")
struct VideoBufferModelTests {
    static func at(_ millis: Int64) -> MediaTime { MediaTime(value: millis, timescale: 1000) }

    @Test func itFillsAtThePeakRateUpToItsSizeAndEmptiesByWholePictures() {
        // 1000 bit/s into 1000 bits, half full when the first picture is due.
        var buffer = VideoBufferModel(maxBitrate: 1000, bufferSize: 1000, initialPercent: 50)
        buffer.takeOut(bytes: 50, at: Self.at(0))        // 500 − 400 = 100
        #expect(buffer.lowestPermille == 100 && buffer.firstUnderflow == nil)
        buffer.takeOut(bytes: 25, at: Self.at(100))      // 100 + 100 − 200 = 0: empty, not dry
        #expect(buffer.lowestPermille == 0 && buffer.firstUnderflow == nil)
        // An hour later it is full, not overfull: 1000 − 800 = 200.
        buffer.takeOut(bytes: 100, at: Self.at(3_600_000))
        #expect(buffer.lowestPermille == 0)
        buffer.takeOut(bytes: 40, at: Self.at(3_600_100)) // 200 + 100 − 320 = −20: dry here
        #expect(buffer.firstUnderflow == Self.at(3_600_100))
        #expect(buffer.lowestPermille == -20)
        buffer.takeOut(bytes: 1, at: Self.at(3_601_000))
        #expect(buffer.firstUnderflow == Self.at(3_600_100))
    }

    @Test func theStartingLevelIsTheOneTheEncodersAreGiven() {
        #expect(RateControl.segmentBufferFill == "0.50")
        let buffer = VideoBufferModel(maxBitrate: 1000, bufferSize: 1000, initialPercent: RateControl.segmentBufferFillPercent)
        #expect(buffer.lowestPermille == 500)
    }
}
