import Foundation
import Testing
@testable import SpliceMedia

/// Handing part of a running segment to an idle lane: the movable end a pipeline consults, and the
/// choice of which segment splits where.
@Suite("Lane handover")
struct LaneHandoverTests {
    static let frame = MediaTime(value: 1, timescale: 25)

    static func at(_ frames: Int64) -> MediaTime { frame * frames }

    @Test func aMovedEndStopsTheSegmentAtTheFirstPictureAtOrAfterIt() {
        let end = SegmentEnd(end: Self.at(250))
        for f in 0..<50 { #expect(end.admits(Self.at(Int64(f)))) }
        #expect(end.position?.pictures == 50)
        #expect(end.position?.last == Self.at(49) && end.position?.previous == Self.at(48))
        #expect(end.moveEnd(to: Self.at(120)))
        #expect(end.end == Self.at(120))
        for f in 50..<120 { #expect(end.admits(Self.at(Int64(f)))) }
        #expect(!end.admits(Self.at(120)))
        // Closed: nothing more is taken, and the end stays where it is.
        #expect(!end.admits(Self.at(121)))
        #expect(!end.moveEnd(to: Self.at(119)))
        #expect(end.end == Self.at(120))
    }

    @Test func anEndIsNotMovedOntoOrBeforeAPictureAlreadyEncoded() {
        let end = SegmentEnd(end: nil)
        for f in 0...30 { #expect(end.admits(Self.at(Int64(f)))) }
        #expect(!end.moveEnd(to: Self.at(30)))
        #expect(!end.moveEnd(to: Self.at(10)))
        #expect(end.end == nil)
        #expect(end.moveEnd(to: Self.at(31)))
        // Only forward: a later end than the one in force is refused.
        #expect(!end.moveEnd(to: Self.at(40)))
        #expect(!end.admits(Self.at(31)))
    }

    @Test func aSegmentWhoseInputEndedCannotHandOver() {
        let end = SegmentEnd(end: nil)
        #expect(end.admits(.zero))
        end.close()
        #expect(!end.moveEnd(to: Self.at(10)))
    }

    /// A running segment of 25 fps video: pictures `first…last` fed, `encoded` of them given back
    /// by its encoder, one every `perPicture` after the first.
    static func running(_ index: Int, from first: Int64, to last: Int64, encoded: Int, end: Int64,
                        perPicture: Duration) -> LaneHandover.Running {
        let t0 = ContinuousClock.now
        let firstOut = t0 + .milliseconds(500)
        let position = SegmentEnd.Position(first: at(first), last: at(last), previous: at(last - 1),
                                           pictures: Int(last - first + 1), firstAt: t0, lastAt: t0 + .seconds(9),
                                           encoded: encoded, firstEncoded: 1, firstEncodedAt: firstOut,
                                           lastEncodedAt: firstOut + perPicture * (encoded - 1))
        return LaneHandover.Running(index: index, end: at(end), position: position)
    }

    @Test func theSegmentWithTheMostEncodingLeftHandsOverSoThatBothLanesEndTogether() throws {
        // Segment 3: pictures 0…100 fed, 76 encoded at 40 ms each; 25 held in its look-ahead and
        // 149 not yet fed (101…249): 6.96 s of encoding. Segment 1 has 1.4 s left.
        let slow = Self.running(3, from: 0, to: 100, encoded: 76, end: 250, perPicture: .milliseconds(40))
        let fast = Self.running(1, from: 300, to: 400, encoded: 90, end: 425, perPicture: .milliseconds(40))
        let handover = LaneHandover(minimumRemaining: .seconds(1), minimumLength: MediaTime(seconds: 1),
                                    startUp: .milliseconds(400))
        let decision = try #require(handover.choose([fast, slow]))
        #expect(decision.index == 3)
        // It keeps its 25 and k more, the new lane starts up (10 pictures' time) and takes the
        // rest: 25 + k = 10 + 149 − k, k = 67; the new segment starts at the picture after
        // 100 + 67.
        #expect(decision.at == Self.at(168))
    }

    @Test func aBitRateWarmUpIsPartOfTheNewLanesStartUp() throws {
        let handover = LaneHandover(minimumRemaining: .seconds(1), minimumLength: MediaTime(seconds: 1),
                                    startUp: .milliseconds(400))
        let slow = Self.running(3, from: 0, to: 100, encoded: 76, end: 250, perPicture: .milliseconds(40))
        // The new lane also encodes 2 s (50 pictures) before its own first one:
        // 25 + k = 10 + 50 + 149 − k, k = 92.
        let decision = try #require(handover.choose([slow], warmUp: MediaTime(seconds: 2)))
        #expect(decision.at == Self.at(193))
        // 69 pictures to feed and 25 held: without a warm-up the new segment gets 42 pictures
        // (k = 27); with it, 17 — under the second it must have — so none is made.
        let shorter = Self.running(3, from: 0, to: 100, encoded: 76, end: 170, perPicture: .milliseconds(40))
        #expect(handover.choose([shorter])?.at == Self.at(128))
        #expect(handover.choose([shorter], warmUp: MediaTime(seconds: 2)) == nil)
    }

    @Test func noHandoverWhenTooLittleIsLeftOrAPieceWouldBeTooShort() {
        let handover = LaneHandover(minimumRemaining: .seconds(2), minimumLength: MediaTime(seconds: 1),
                                    startUp: .milliseconds(300))
        // 20 held and 19 to feed at 40 ms: 1.56 s of encoding left, below the minimum.
        #expect(handover.choose([Self.running(0, from: 0, to: 100, encoded: 81, end: 120, perPicture: .milliseconds(40))]) == nil)
        // 3.6 s of encoding left, but the new segment would have under a second of video (23 pictures).
        let slowShort = Self.running(0, from: 0, to: 100, encoded: 81, end: 130, perPicture: .milliseconds(73))
        #expect(handover.choose([slowShort]) == nil)
        // Fewer than three pictures back from the encoder: no rate yet.
        #expect(handover.choose([Self.running(0, from: 0, to: 30, encoded: 3, end: 500, perPicture: .milliseconds(40))]) == nil)
        // Nothing running.
        #expect(handover.choose([]) == nil)
    }
}
