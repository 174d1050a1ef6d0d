import Foundation
import SpliceCore
import SpliceMedia
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

/// The real `splice` binary: `db migrate|status` against a private PostgreSQL, `keys generate` on
/// disk, and the API commands against a scripted coordinator.
@Suite("splice client commands", .timeLimit(.minutes(2)))
struct ClientCommandTests {
    // MARK: - db

    @Test("db status, migrate, status again: pending, applied, up to date; the password never shows")
    func databaseMigrations() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        // The test server trusts local connections, so the password is accepted and ignored.
        let url = database.description + " password=hunter2-secret"
        let environment = ["SPLICE_DATABASE_URL": url]

        let before = try await SpliceProcess.run(["db", "status"], environment: environment)
        #expect(before.status == 0, "\(before.stderr)")
        #expect(before.stdout.contains("0001     pending"))
        #expect(before.stdout.contains("migration(s) pending: run `splice db migrate`"))

        let migrate = try await SpliceProcess.run(["db", "migrate", "--database", url])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.contains("applied 0001 job_store"))
        #expect(migrate.stdout.hasPrefix("database: \(database.description) password=***\n"))

        let after = try await SpliceProcess.run(["db", "status"], environment: environment)
        #expect(after.status == 0)
        #expect(after.stdout.contains("0001     applied"))
        #expect(after.stdout.contains("schema is up to date"))

        let again = try await SpliceProcess.run(["db", "migrate"], environment: environment)
        #expect(again.status == 0)
        #expect(again.stdout.contains("nothing to apply"))
        for run in [before, migrate, after, again] {
            #expect(!(run.stdout + run.stderr).contains("hunter2"))
        }
    }

    @Test("a database newer than the binary: status and migrate exit 1 and say what to do")
    func newerDatabase() async throws {
        let database = try await TestPostgres.makeDatabase()
        _ = try await PostgresConnection.withConnection(database) { connection in
            try await connection.query("""
                INSERT INTO splice_schema_migrations (version, name, checksum) VALUES (9999, 'from_the_future', 'x')
                """)
        }
        let status = try await SpliceProcess.run(["db", "status", "--database", database.description])
        #expect(status.status == 1)
        #expect(status.stdout.contains("9999     UNKNOWN"))
        #expect(status.stdout.contains("error: the database has migration 9999 (from_the_future)"))
        let migrate = try await SpliceProcess.run(["db", "migrate", "--database", database.description])
        #expect(migrate.status == 1)
        #expect(migrate.stderr.hasPrefix("splice db migrate: "))
        #expect(migrate.stderr.contains("newer than the code"))
        #expect(migrate.stderr.split(separator: "\n").count == 1)
    }

    @Test("no database server: one line, exit 1, no password")
    func noServer() async throws {
        let url = "postgresql://splice:hunter2-secret@127.0.0.1:\(try unusedPort())/splice"
        let result = try await SpliceProcess.run(["db", "status", "--database", url])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("splice db status: "))
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(!result.stderr.contains("hunter2"))
    }

    // MARK: - keys

    @Test("keys generate: NAME.key 0600 and NAME.pub 0644 that match; no overwrite without --force")
    func keys() async throws {
        let directory = Fixtures.temporaryDirectory("keys").path
        let name = directory + "/nested/worker1"
        let created = try await SpliceProcess.run(["keys", "generate", name])
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try mode(name + ".key") == 0o600)
        #expect(try mode(name + ".pub") == 0o644)
        let pair = try CurveKeyPair.load(secretKeyPath: name + ".key")
        #expect(try CurvePublicKey.load(path: name + ".pub") == pair.publicKey)
        #expect(created.stdout.contains("public key: \(pair.publicKey.z85)"))

        let secret = try Data(contentsOf: URL(fileURLWithPath: name + ".key"))
        let refused = try await SpliceProcess.run(["keys", "generate", name])
        #expect(refused.status == 1)
        #expect(refused.stderr == "splice keys generate: \(name).key already exists; keep it, or pass --force to "
                + "replace the key pair (whatever uses the old key stops working)\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: name + ".key")) == secret)

        // Only the public half left: still refused, and no lone new secret key appears.
        let other = directory + "/other"
        _ = FileManager.default.createFile(atPath: other + ".pub", contents: Data("keep me\n".utf8))
        let half = try await SpliceProcess.run(["keys", "generate", other])
        #expect(half.status == 1)
        #expect(!FileManager.default.fileExists(atPath: other + ".key"))

        let forced = try await SpliceProcess.run(["keys", "generate", name, "--force"])
        #expect(forced.status == 0)
        #expect(try CurveKeyPair.load(secretKeyPath: name + ".key").publicKey != pair.publicKey)
        #expect(try mode(name + ".key") == 0o600)
    }

    // MARK: - API commands

    @Test("submit prints the job id; the SUBMIT carries absolute paths and the export settings")
    func submit() async throws {
        let server = try await ScriptedAPIServer.start { _, _ in [.reply(.submitted(JobSubmitted(job: .numbered(7))))] }
        let result = try await SpliceProcess.run([
            "submit", "in.mov", "out/clip.mp4", "--crf", "20", "--segment-seconds", "6", "--priority", "3",
            "--coordinator", server.endpoint,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\(JobID.numbered(7))\n")
        guard case .submit(let submit)? = server.requests.first?.message else {
            Issue.record("no SUBMIT received")
            return
        }
        let here = FileManager.default.currentDirectoryPath
        #expect(submit.input == here + "/in.mov")
        #expect(submit.output == here + "/out/clip.mp4")
        #expect(submit.priority == 3)
        #expect(submit.submissionKey?.isEmpty == false)
        let request = try submit.export.decode(TranscodeRequest.self)
        #expect(request.video?.quality == 20)
        #expect(request.segmentDuration == MediaTime(seconds: 6))
        await server.stop()
    }

    @Test("submit --wait: the job's outcome is the exit status", arguments: [
        (JobState.succeeded, Int32(0)), (JobState.failed, Int32(1)), (JobState.cancelled, Int32(2)),
    ])
    func submitWait(outcome: JobState, status expected: Int32) async throws {
        let job = JobID.numbered(outcome.rawValue.count)
        let server = try await ScriptedAPIServer.start { request, index in
            switch request {
            case .submit:
                return [.reply(.submitted(JobSubmitted(job: job)))]
            case .status where index < 3:
                return [.reply(.status(.scripted(job, .running, done: index - 1, total: 2)))]
            case .status:
                let error = outcome == .failed ? "segment 1 could not be decoded on 3 workers" : nil
                return [.reply(.status(.scripted(job, outcome, done: 2, total: 2, error: error)))]
            default:
                return []
            }
        }
        let result = try await SpliceProcess.run(["submit", "/in.mov", "/out.mp4", "--wait",
                                                  "--coordinator", server.endpoint])
        #expect(result.status == expected, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("job \(job) submitted; waiting for it (Ctrl-C stops waiting, not the job)\n"))
        #expect(result.stderr.contains("progress 50% 1/2\n"))
        switch outcome {
        case .succeeded:
            #expect(result.stdout == "job \(job) succeeded: /out.mp4\n")
        case .failed:
            #expect(result.stderr.hasSuffix(
                "splice submit: job \(job) failed: segment 1 could not be decoded on 3 workers\n"))
        default:
            #expect(result.stderr.hasSuffix("splice submit: job \(job) was cancelled\n"))
        }
        await server.stop()
    }

    @Test("submit --wait survives a coordinator restart: says so on stderr and keeps waiting")
    func submitWaitRestart() async throws {
        let job = JobID.numbered(101)
        let first = try await ScriptedAPIServer.submitting(job, then: .scripted(job, .running, done: 1, total: 4))
        let endpoint = first.endpoint
        let process = try SpliceProcess(["submit", "/in.mov", "/out.mp4", "--wait", "--timeout", "5",
                                         "--coordinator", endpoint])
        #expect(await process.waitForStderr(containing: "progress 25% 1/4"))
        await first.stop()
        #expect(await process.waitForStderr(containing: "coordinator unreachable, retrying"))
        let second = try await ScriptedAPIServer.submitting(job, then: .scripted(job, .succeeded, done: 4, total: 4),
                                                           on: endpoint)
        let result = await process.finish(within: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("coordinator reachable again\n"))
        #expect(result.stdout == "job \(job) succeeded: /out.mp4\n")
        #expect(!second.requests.contains { if case .submit = $0.message { true } else { false } })
        await second.stop()
    }

    @Test("Ctrl-C while waiting stops waiting, not the job: exit 130 and how to cancel it")
    func submitWaitInterrupted() async throws {
        let job = JobID.numbered(102)
        let server = try await ScriptedAPIServer.submitting(job, then: .scripted(job, .running, done: 0, total: 8))
        let process = try SpliceProcess(["submit", "/in.mov", "/out.mp4", "--wait", "--coordinator", server.endpoint])
        #expect(await process.waitForStderr(containing: "progress 0% 0/8"))
        process.send(SIGINT)
        let result = await process.finish(within: .seconds(10))
        #expect(result.status == 130)
        #expect(result.stderr.hasSuffix("splice submit: stopped waiting; job \(job) is still running. Follow it with "
                                        + "`splice status \(job)`, cancel it with `splice cancel \(job)`\n"))
        #expect(!server.requests.contains { if case .cancel = $0.message { true } else { false } })
        await server.stop()
    }

    @Test("status, jobs, cancel, workers, enroll, revoke and tokens print what the coordinator answered")
    func readCommands() async throws {
        let key = try CurveKeyPair.generate().publicKey
        let running = JobStatus.scripted(.numbered(1), .running, done: 2, total: 5)
        let tokenInfo = TokenInfo(name: "ci", scopes: [.read, .submit], inputRoots: ["/srv/in"], outputRoots: [],
                                  rateLimit: nil, createdAtMilliseconds: 1_796_059_201_250,
                                  expiresAtMilliseconds: nil, revokedAtMilliseconds: nil)
        let server = try await ScriptedAPIServer.start { request, _ in
            switch request {
            case .status: [.reply(.status(running))]
            case .list(let list): [.reply(.jobs(JobList(jobs: list.state == .failed ? [] : [running])))]
            case .cancel(let cancel): [.reply(.cancelled(JobCancelled(job: cancel.job, state: .cancelled)))]
            case .workers: [.reply(.workers(WorkerList(workers: [WorkerInfo(
                publicKey: key, name: "w1", enrolled: true, connected: true, slots: 2, running: 1,
                lastSeenAtMilliseconds: 1_796_059_201_250, protocolVersion: 3)])))]
            case .enroll(let enroll):
                [.reply(.workerKey(WorkerKeyChanged(publicKey: enroll.publicKey, enrolled: true)))]
            case .revoke(let revoke):
                [.reply(.workerKey(WorkerKeyChanged(publicKey: revoke.publicKey, enrolled: false, sessionsClosed: 1)))]
            case .createToken(let create):
                [.reply(.token(TokenChanged(token: "spl_scripted-token", info: TokenInfo(
                    name: create.name, scopes: create.scopes, inputRoots: create.inputRoots ?? [],
                    outputRoots: create.outputRoots ?? [], rateLimit: create.rateLimit,
                    createdAtMilliseconds: 1_796_059_201_250, expiresAtMilliseconds: nil, revokedAtMilliseconds: nil))))]
            case .tokens: [.reply(.tokens(TokenList(tokens: [tokenInfo])))]
            case .revokeToken(let revoke):
                [.reply(.token(TokenChanged(info: TokenInfo(
                    name: revoke.name, scopes: [.read], inputRoots: [], outputRoots: [], rateLimit: nil,
                    createdAtMilliseconds: 1_796_059_201_250, expiresAtMilliseconds: nil,
                    revokedAtMilliseconds: 1_796_059_301_250))))]
            case .createJoinToken(let create):
                [.reply(.joinToken(JoinTokenChanged(token: "splj_scripted", info: JoinTokenInfo(
                    name: create.name, uses: create.uses, usesLeft: create.uses,
                    createdAtMilliseconds: 1_796_059_201_250, expiresAtMilliseconds: 1_796_062_801_250))))]
            case .joinTokens:
                [.reply(.joinTokens(JoinTokenList(tokens: [JoinTokenInfo(
                    name: "pods", uses: 5, usesLeft: 3, createdAtMilliseconds: 1_796_059_201_250,
                    expiresAtMilliseconds: 1_796_062_801_250)])))]
            case .revokeJoinToken(let revoke):
                [.reply(.joinToken(JoinTokenChanged(info: JoinTokenInfo(
                    name: revoke.name, uses: 5, usesLeft: 3, createdAtMilliseconds: 1_796_059_201_250,
                    expiresAtMilliseconds: 1_796_062_801_250, revokedAtMilliseconds: 1_796_059_301_250))))]
            case .pruneWorkers(let prune):
                [.reply(.workersPruned(WorkersPruned(
                    workers: [.init(publicKey: key.z85, name: "w1", lastSeenAtMilliseconds: 1_796_059_201_250)],
                    dryRun: prune.dryRun)))]
            case .pruneJobs(let prune):
                [.reply(.jobsPruned(JobsPruned(jobs: 12, segments: 80, events: 400, webhookEvents: 3,
                                               dryRun: prune.dryRun)))]
            case .submit: []
            }
        }
        let environment = ["SPLICE_COORDINATOR": server.endpoint]
        func run(_ words: String...) async throws -> SpliceProcess.Result {
            let result = try await SpliceProcess.run(words, environment: environment)
            #expect(result.status == 0, "\(words): \(result.stderr)")
            return result
        }
        #expect(try await run("status", "\(JobID.numbered(1))").stdout.contains("progress   2/5 segments (40%)\n"))
        let json = try await run("status", "\(JobID.numbered(1))", "--json").stdout
        #expect(try JSONDecoder().decode(JobStatus.self, from: Data(json.utf8)) == running)
        let jobs = try await run("jobs").stdout.split(separator: "\n")
        #expect(jobs.count == 2 && jobs[0].hasPrefix("JOB") && jobs[1].hasPrefix("\(JobID.numbered(1))  running  2/5"))
        #expect(try await run("jobs", "--state", "failed").stdout == "no failed jobs\n")
        #expect(try await run("cancel", "\(JobID.numbered(1))").stdout == "job \(JobID.numbered(1)) cancelled\n")
        // An id that cannot name a job is refused where it is typed, before anything is sent.
        let before = server.requests.count
        let malformed = try await SpliceProcess.run(["status", "job-1"], environment: environment)
        #expect(malformed.status != 0 && malformed.stderr.contains("a job id"), "\(malformed.stderr)")
        #expect(server.requests.count == before)
        #expect(try await run("workers").stdout.contains(key.z85 + "  w1    yes       yes        3         2      -      -             1"))
        #expect(try await run("workers", "enroll", key.z85, "--name", "w1").stdout
            == "enrolled worker key \(key) (w1)\n")
        #expect(try await run("workers", "revoke", key.z85).stdout
            == "revoked worker key \(key); closed 1 live session\n")
        // The token alone on standard output (for `TOKEN=$(splice tokens create …)`), the words on stderr.
        let created = try await run("tokens", "create", "ci", "--scopes", "submit, read", "--expires", "90d",
                                    "--input-root", "/srv/in", "--rate-limit", "20")
        #expect(created.stdout == "spl_scripted-token\n")
        #expect(created.stderr.contains("token ci created with scopes read,submit; it is shown once"))
        let listed = try await run("tokens", "list").stdout.split(separator: "\n")
        #expect(listed.count == 2 && listed[0].hasPrefix("NAME") && listed[1].hasPrefix("ci    read,submit  /srv/in"),
                "\(listed)")
        #expect(try await run("tokens", "revoke", "ci").stdout == "revoked token ci\n")
        let badScopes = try await SpliceProcess.run(["tokens", "create", "x", "--scopes", "read,write"],
                                                    environment: environment)
        #expect(badScopes.status != 0 && badScopes.stderr.contains("--scopes"), "\(badScopes.stderr)")
        let sent = server.requests.map { $0.message }
        #expect(sent.contains(.list(ListJobs(state: .failed, limit: 50))))
        #expect(sent.contains(.enroll(EnrollWorker(publicKey: key, name: "w1"))))
        #expect(sent.contains(.createToken(CreateToken(name: "ci", scopes: [.read, .submit], inputRoots: ["/srv/in"],
                                                       rateLimit: 20, expiresInSeconds: 90 * 86_400))))
        #expect(sent.contains(.revokeToken(RevokeToken(name: "ci"))))
        // Join tokens: the token alone on standard output, its secret never in the list.
        let joinToken = try await run("workers", "join-token", "create", "--uses", "5", "--ttl", "1h", "--name", "pods")
        #expect(joinToken.stdout == "splj_scripted\n")
        #expect(joinToken.stderr.contains("join token pods created for 5 workers"), "\(joinToken.stderr)")
        let joinTokens = try await run("workers", "join-token", "list").stdout.split(separator: "\n")
        #expect(joinTokens.count == 2 && joinTokens[1].hasPrefix("pods  3/5"), "\(joinTokens)")
        #expect(try await run("workers", "join-token", "revoke", "pods").stdout
            == "revoked join token pods (3 uses were left)\n")
        let prunedWorkers = try await run("workers", "prune", "--not-seen", "24h", "--dry-run").stdout
        #expect(prunedWorkers.contains("would revoke worker key \(key.z85) (w1)"))
        #expect(prunedWorkers.hasSuffix("would revoke 1 worker key\n"))
        #expect(try await run("jobs", "prune", "--finished-before", "30d").stdout
            == "deleted 12 jobs, 80 segments, 400 events and 3 webhook events\n")
        let joinSent = server.requests.map { $0.message }
        #expect(joinSent.contains(.createJoinToken(CreateJoinToken(name: "pods", uses: 5, ttlSeconds: 3600))))
        #expect(joinSent.contains(.pruneWorkers(PruneWorkers(notSeenSeconds: 86_400, dryRun: true))))
        #expect(joinSent.contains(.pruneJobs(PruneJobs(finishedBeforeSeconds: 30 * 86_400, dryRun: false))))
        await server.stop()
    }

    @Test("no coordinator: the one line the contract names, exit 1")
    func noCoordinator() async throws {
        let endpoint = "tcp://127.0.0.1:\(try unusedPort())"
        let result = try await SpliceProcess.run(["jobs", "--coordinator", endpoint, "--timeout", "0.5"])
        #expect(result.status == 1)
        #expect(result.stderr
            == "splice jobs: no coordinator answered at \(endpoint); is `splice coordinator` running?\n")
    }

    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
