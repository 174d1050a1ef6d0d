/// `splice progress-demo`: a hidden command that drives a progress bar through fake work, so the
/// terminal rendering, plain output and Ctrl-C handling can be seen and tested end to end.
struct ProgressDemoCommand: Command {
    static let steps = Option<Int>("steps", valueName: "count", help: "Units of fake work.", default: 40)
    static let interval = Option<Int>("interval", valueName: "ms", help: "Milliseconds per unit.", default: 50)
    static let counted = Flag("counted", help: "Show done/total counts, like segments of a job.")

    static let configuration = CommandConfiguration(
        name: "progress-demo", abstract: "Show a progress bar over fake work.",
        arguments: [steps, interval, counted], isHidden: true)

    let steps: Int
    let interval: Int
    let counted: Bool

    init(_ arguments: ParsedArguments) throws {
        steps = try arguments.value(Self.steps)
        interval = try arguments.value(Self.interval)
        counted = arguments[Self.counted]
    }

    func validate() throws {
        guard steps > 0 else { throw UsageError("--steps must be at least 1; got " + String(steps)) }
        guard interval >= 0 else { throw UsageError("--interval cannot be negative; got " + String(interval)) }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let bar = ProgressBar(label: "demo", output: context.errorOutput)
        do {
            for done in 0...steps {
                if counted {
                    bar.update(completed: done, total: steps)
                } else {
                    bar.update(fraction: Double(done) / Double(steps))
                }
                if done < steps { try await Task.sleep(for: .milliseconds(interval)) }
            }
        } catch {
            bar.clear()
            throw error
        }
        bar.finish()
        return .success
    }
}
