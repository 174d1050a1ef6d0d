import SpliceCore
import SpliceWire

/// `splice tokens`: the HTTP API's bearer tokens — `create NAME --scopes …` prints a new token
/// once, `list` shows them (never the tokens), `revoke NAME` refuses one from now on. Through the
/// coordinator's client API, with an admin key.
struct TokensCommand: ClientCommand {
    static let json = Flag("json", help: "Print the tokens as JSON.")

    static let configuration = CommandConfiguration(
        name: "tokens", abstract: "List the HTTP API's bearer tokens, or create and revoke them.",
        discussion: """
            Tokens authenticate `Authorization: Bearer …` on the coordinator's HTTP API \
            (--http-endpoint). The coordinator keeps only their SHA-256: a token is printed once, \
            when it is created.
            """,
        arguments: [json] + ClientOptions.arguments,
        subcommands: [TokensCreateCommand.self, TokensListCommand.self, TokensRevokeCommand.self])

    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        json = arguments[Self.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        try await TokensListCommand.list(client: client, json: json, context: context)
    }

    /// One row per token: name, scopes, roots, rate, created, expires.
    static func table(_ tokens: [TokenInfo]) -> TextTable {
        var table = TextTable(headers: ["NAME", "SCOPES", "INPUT ROOTS", "OUTPUT ROOTS", "RATE/S", "CREATED (UTC)",
                                        "EXPIRES (UTC)"])
        for token in tokens {
            table.rows.append([
                token.name, APIScope.list(Set(token.scopes)),
                token.inputRoots.isEmpty ? "-" : token.inputRoots.joined(separator: ","),
                token.outputRoots.isEmpty ? "-" : token.outputRoots.joined(separator: ","),
                token.rateLimit.map(String.init) ?? "default",
                ClusterText.time(millisecondsSinceEpoch: token.createdAtMilliseconds),
                token.expiresAtMilliseconds.map { ClusterText.time(millisecondsSinceEpoch: $0) } ?? "never",
            ])
        }
        return table
    }
}

/// `splice tokens create NAME --scopes read,submit [--expires 90d] [--input-root DIR]…`.
struct TokensCreateCommand: ClientCommand {
    static let name = Positional<String>("name", help: "A name for the token (letters, digits, . _ -; up to 64).")
    static let scopes = Option<Set<APIScope>>(
        "scopes", valueName: "list",
        help: "What it may do, comma-separated: read (jobs, events, workers), submit, cancel, admin.",
        isRequired: true, expected: "scopes from read, submit, cancel, admin, comma-separated"
    ) { try? APIScope.parseList($0).get() }
    static let expires = Option<Int64>(
        "expires", valueName: "duration", help: "How long it lasts: 90d, 12h, 30m, 3600s (default: until revoked).",
        expected: "a duration like 90d, 12h, 30m or 3600s") { TokensCreateCommand.seconds($0) }
    static let inputRoot = Option<String>(
        "input-root", valueName: "dir",
        help: "Only jobs whose input lies in this folder (links resolved; repeatable; on the coordinator's machine).",
        isRepeatable: true)
    static let outputRoot = Option<String>(
        "output-root", valueName: "dir",
        help: "Only jobs whose output lies in this folder (links resolved; repeatable; on the coordinator's machine).",
        isRepeatable: true)
    static let rateLimit = Option<Int>(
        "rate-limit", valueName: "per-second",
        help: "Requests a second it may make, in bursts of twice that (default: the coordinator's --http-rate-limit).")

    static let configuration = CommandConfiguration(
        name: "create", abstract: "Create a bearer token for the HTTP API and print it (once).",
        discussion: """
            Prints the token alone on standard output — store it now: the coordinator keeps only its \
            SHA-256. `Authorization: Bearer <token>` on the HTTP API.
            """,
        arguments: [name, scopes, expires, inputRoot, outputRoot, rateLimit] + ClientOptions.arguments)

    let request: CreateToken
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        let roots = { (values: [String], flag: String) throws -> [String]? in
            for root in values where !root.hasPrefix("/") {
                throw UsageError("--\(flag) \(root) must be an absolute path (on the coordinator's machine)")
            }
            return values.isEmpty ? nil : values
        }
        let scopes = try arguments.value(Self.scopes)
        guard !scopes.isEmpty else { throw UsageError("--scopes names no scope") }
        request = CreateToken(
            name: try arguments.value(Self.name), scopes: scopes.sorted(),
            inputRoots: try roots(arguments.values(Self.inputRoot), "input-root"),
            outputRoots: try roots(arguments.values(Self.outputRoot), "output-root"),
            rateLimit: arguments[Self.rateLimit], expiresInSeconds: arguments[Self.expires])
        client = try ClientOptions(arguments)
    }

    func validate() throws {
        if let rate = request.rateLimit, !(1...1_000_000).contains(rate) {
            throw UsageError("--rate-limit must be from 1 to 1000000 requests a second; got \(rate)")
        }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let created = try await client.withClient { try await $0.createToken(request) }
        context.errorOutput.writeLine("token \(created.info.name) created with scopes "
            + APIScope.list(Set(created.info.scopes)) + "; it is shown once — store it now")
        context.output.writeLine(created.token ?? "")
        return .success
    }

    /// `90d`, `12h`, `30m`, `3600s` (or bare seconds) in seconds; nil for anything else.
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["d": 86_400, "h": 3600, "m": 60, "s": 1]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            digits = text.dropLast()
            unit = scale
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let value = Int64(digits),
              value > 0, value <= 3650 * 86_400 / unit else { return nil }
        return value * unit
    }
}

/// `splice tokens list [--json]`.
struct TokensListCommand: ClientCommand {
    static let configuration = CommandConfiguration(
        name: "list", abstract: "List the live tokens (never the tokens themselves).",
        arguments: [TokensCommand.json] + ClientOptions.arguments)

    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        json = arguments[TokensCommand.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        try await Self.list(client: client, json: json, context: context)
    }

    static func list(client: ClientOptions, json: Bool, context: CommandContext) async throws -> ExitCode {
        let tokens = try await client.withClient { try await $0.tokens() }
        if json {
            try context.output.writeJSON(tokens)
        } else if tokens.isEmpty {
            context.output.writeLine("no tokens; `splice tokens create NAME --scopes read,submit` makes one")
        } else {
            for line in TokensCommand.table(tokens).lines { context.output.writeLine(line) }
        }
        return .success
    }
}

/// `splice tokens revoke NAME`.
struct TokensRevokeCommand: ClientCommand {
    static let name = Positional<String>("name", help: "The token's name.")

    static let configuration = CommandConfiguration(
        name: "revoke", abstract: "Refuse a token from now on.",
        arguments: [name] + ClientOptions.arguments)

    let name: String
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        name = try arguments.value(Self.name)
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let revoked = try await client.withClient { try await $0.revokeToken(named: name) }
        context.output.writeLine("revoked token \(revoked.info.name)")
        return .success
    }
}
