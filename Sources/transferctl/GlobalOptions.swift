import ArgumentParser
import Foundation
import OpenAPIRuntime
import OpenAPIURLSession
import TransferdClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The options every command takes; each falls back to its environment variable.
struct GlobalOptions: ParsableArguments {
    @Option(help: ArgumentHelp("transferd's base URL (env TRANSFERD_URL).", valueName: "url"))
    var server: String?

    @Option(help: ArgumentHelp("API token (env TRANSFERD_TOKEN).", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp(
        "Session identifier (env TRANSFERD_SESSION); default a background session transferctl.<user>, created on first use.",
        valueName: "id"))
    var session: String?

    @Flag(help: "Print the API's objects, one JSON object a line.")
    var json = false

    @Option(help: ArgumentHelp("Output format: table or json.", valueName: "format"))
    var format: OutputFormat?

    enum OutputFormat: String, ExpressibleByArgument { case table, json }

    func api() throws -> API {
        let environment = ProcessInfo.processInfo.environment
        let text = server ?? environment["TRANSFERD_URL"] ?? "http://127.0.0.1:8080"
        guard let url = URL(string: text.hasSuffix("/") ? String(text.dropLast()) : text),
              url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw Failure.usage("--server must be an http(s) URL, not \(text)")
        }
        let token = token ?? environment["TRANSFERD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return API(baseURL: url, token: token, explicitSession: session ?? environment["TRANSFERD_SESSION"],
                   output: Output(json: json || format == .json, replies: Replies()))
    }
}

/// A connection to transferd: the generated client, and what the stream reader needs besides.
struct API: Sendable {
    let baseURL: URL
    let token: String?
    let explicitSession: String?
    let output: Output
    let client: Client

    init(baseURL: URL, token: String?, explicitSession: String?, output: Output) {
        self.baseURL = baseURL
        self.token = token
        self.explicitSession = explicitSession
        self.output = output
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        let transport = URLSessionTransport(configuration: .init(session: URLSession(configuration: configuration)))
        // Replies are kept only for --json, which reads them: a live `top` would keep every refresh.
        client = Client(serverURL: baseURL, transport: transport,
                        middlewares: [APIMiddleware(token: token, replies: output.json ? output.replies : nil)])
    }

    /// The session named by --session or TRANSFERD_SESSION, else `transferctl.<user>` as a
    /// background session, created (or re-attached, keeping its configuration) on the way.
    func session() async throws -> String {
        if let explicitSession { return explicitSession }
        let identifier = "transferctl." + Self.userName()
        _ = try await client.putSession(path: .init(identifier: identifier), body: .json(.init(mode: .background)))
        return identifier
    }

    /// The login name, reduced to the characters a session identifier may hold.
    static func userName() -> String {
        let name = getpwuid(getuid()).flatMap { String(validatingCString: $0.pointee.pw_name) }
            ?? ProcessInfo.processInfo.environment["USER"] ?? "user"
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let kept = String(name.filter { allowed.contains($0) })
        return kept.isEmpty ? "user" : kept
    }
}
