import SpliceMedia
import Testing

@testable import splice

private let presets = "ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow"

@Suite("Argument parsing")
struct ArgumentParserTests {
    @Test("options take their value after a space or after =, anywhere among positionals")
    func optionForms() throws {
        let export = try parse(["in.mp4", "--width", "1280", "out.mp4", "--preset=slow"], as: FakeExport.self)
        #expect(export.input == "in.mp4")
        #expect(export.output == "out.mp4")
        #expect(export.flags.width == 1280)
        #expect(export.flags.preset == .slow)
        #expect(try parse(["in.mp4", "-w", "640"], as: FakeExport.self).flags.width == 640)
        #expect(try parse(["in.mp4", "--width=-4"], as: FakeExport.self).flags.width == -4)
    }

    @Test("absent options read as their default or nil; flags as false")
    func defaults() throws {
        let export = try parse(["in.mp4"], as: FakeExport.self)
        #expect(export.output == nil)
        #expect(export.flags.width == nil)
        #expect(export.flags.preset == .medium)
        #expect(export.flags.start == nil)
        #expect(export.flags.faststart == false)
        #expect(export.flags.metadata.isEmpty)
    }

    @Test("flags, repeated options and custom conversions")
    func flagsAndRepeats() throws {
        let export = try parse(["in.mp4", "--faststart", "--metadata", "title=A b", "--metadata=year=2026",
                                "--start", "00:01:02.5"], as: FakeExport.self)
        #expect(export.flags.faststart)
        #expect(export.flags.metadata == ["title=A b", "year=2026"])
        #expect(export.flags.start == MediaTime(value: 625, timescale: 10))
        #expect(try parse(["in.mp4", "--start", "1.5"], as: FakeExport.self).flags.start
            == MediaTime(value: 3, timescale: 2))
    }

    @Test("after --, words starting with - are positionals; a lone - is a positional")
    func terminator() throws {
        let export = try parse(["--width", "10", "--", "-weird.mp4", "--width"], as: FakeExport.self)
        #expect(export.input == "-weird.mp4")
        #expect(export.output == "--width")
        #expect(export.flags.width == 10)
        #expect(try parse(["-", "out.mp4"], as: FakeExport.self).input == "-")
    }

    @Test("a worker key may start with '-'; one-letter options and unknown options elsewhere still parse as before")
    func leadingDashKey() throws {
        let key = "-%Jc^gQ}RC7gx}V<p9FFnY+=wCAHJ3z@R<3IV}9Y"
        let enroll = try parse([key, "--name", "w1"], as: WorkersEnrollCommand.self)
        #expect(enroll.key.z85 == key && enroll.name == "w1")
        #expect(try parse(["--name", "w1", key], as: WorkersEnrollCommand.self).key.z85 == key)
        #expect(try parse([key], as: WorkersRevokeCommand.self).key.z85 == key)
        #expect(throws: UsageError.self) { try parse([key, key], as: WorkersRevokeCommand.self) }
        #expect(throws: UsageError.self) { try parse(["in.mp4", "-weird.mp4"], as: FakeExport.self) }
        #expect(try parse(["in.mp4", "-w", "640"], as: FakeExport.self).flags.width == 640)
    }

    @Test("a repeatable positional takes every remaining word")
    func repeatablePositional() throws {
        #expect(try parse(["k1", "k2", "k3"], as: FakeEnroll.self).keys == ["k1", "k2", "k3"])
        #expect(try parse([], as: FakeEnroll.self).keys == [])
    }

    @Test("environment variables fill absent options; the command line wins")
    func environmentFallback() throws {
        let environment = ["SPLICE_DATABASE_URL": "postgres://env/db", "SPLICE_DRY_RUN": "yes"]
        let fromEnvironment = try parse([], as: FakeMigrate.self, environment: environment)
        #expect(fromEnvironment.database == "postgres://env/db")
        #expect(fromEnvironment.dryRun)
        let fromFlag = try parse(["--database", "postgres://flag/db"], as: FakeMigrate.self, environment: environment)
        #expect(fromFlag.database == "postgres://flag/db")
        #expect(try parse([], as: FakeMigrate.self, environment: ["SPLICE_DATABASE_URL": "x", "SPLICE_DRY_RUN": "0"])
            .dryRun == false)
        #expect(try parse([], as: FakeWorkers.self).coordinator == "tcp://127.0.0.1:7451")
        #expect(try parse([], as: FakeWorkers.self, environment: ["SPLICE_COORDINATOR": "tcp://c:1"]).coordinator
            == "tcp://c:1")
        #expect(try parse([], as: FakeWorkers.self, environment: ["SPLICE_COORDINATOR": ""]).coordinator
            == "tcp://127.0.0.1:7451")
    }

    @Test("each invalid command line gives an error naming the argument", arguments: [
        (["in.mp4", "--width", "wide"], "--width: 'wide' is not an integer"),
        (["in.mp4", "--width"], "--width needs a value: --width <pixels>"),
        (["in.mp4", "--width", "--faststart"], "--width needs a value: --width <pixels>"),
        (["in.mp4", "--width", "1", "--width", "2"], "--width was given more than once; give it once"),
        (["in.mp4", "--faststart=yes"], "--faststart is a flag and takes no value"),
        (["in.mp4", "--preset", "quick"], "--preset: 'quick' is not one of " + presets),
        (["in.mp4", "--preset", "fsat"], "--preset: 'fsat' is not one of " + presets + "; did you mean 'fast'?"),
        (["in.mp4", "--start", "1:99"], "--start: '1:99' is not a time like 1.5 or 00:01:02.5"),
        (["in.mp4", "--widht", "5"], "unknown option '--widht'; did you mean '--width'?"),
        (["in.mp4", "--fast"], "unknown option '--fast'; did you mean '--faststart'?"),
        (["in.mp4", "--bogus"], "unknown option '--bogus'"),
        (["in.mp4", "-x"], "unknown option '-x'; put '--' before arguments that start with '-'"),
        ([], "missing <input>"),
        (["a", "b", "c"], "unexpected argument 'c'"),
        (["in.mp4", "--width", "0"], "--width must be positive; got 0"),
    ])
    func exportErrors(words: [String], message: String) {
        #expect(usageError(words, for: FakeExport.self) == message)
    }

    @Test("missing and invalid values from the environment name the variable")
    func environmentErrors() {
        #expect(usageError([], for: FakeMigrate.self)
            == "missing --database <url> (or set SPLICE_DATABASE_URL)")
        #expect(usageError(["--database", "x"], for: FakeMigrate.self, environment: ["SPLICE_DRY_RUN": "maybe"])
            == "--dry-run: 'maybe' (from SPLICE_DRY_RUN) is not one of true, false, 1, 0, yes, no")
    }

    @Test("passwords in rejected values are not echoed back")
    func redactedValues() {
        #expect(usageError(["x", "--width", "postgres://u:secret@h/db"], for: FakeExport.self)
            == "--width: 'postgres://u:***@h/db' is not an integer")
    }

    @Test("did-you-mean tolerates a swap, a typo or a missing letter, and stays quiet when nothing is close")
    func suggestions() {
        let names = ["width", "height", "preset", "faststart", "coordinator"]
        #expect(Suggestion.closest(to: "widht", among: names) == "width")
        #expect(Suggestion.closest(to: "heigt", among: names) == "height")
        #expect(Suggestion.closest(to: "coordinater", among: names) == "coordinator")
        #expect(Suggestion.closest(to: "xyz", among: names) == nil)
        #expect(Suggestion.closest(to: "colour", among: names) == nil)
        #expect(Suggestion.distance("ab", "ba") == 1)
        #expect(Suggestion.distance("", "abc") == 3)
        #expect(Suggestion.distance("kitten", "sitting") == 3)
    }
}
