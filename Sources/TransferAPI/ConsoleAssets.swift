/// One file of the web console, ready to send.
struct ConsoleAsset: Sendable {
    let bytes: [UInt8]
    let contentType: String
    /// Computed once at start: the files change only with the binary.
    let tag: String

    init(_ bytes: [UInt8], _ contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
        tag = EntityTag.of(bytes)
    }
}

/// The web console's files (`Console/`), compiled into the binary by SwiftPM's `embedInCode`
/// resource rule (`PackageResources`): the release binary copied on its own, as the container
/// image copies it, serves them, with no resource bundle beside it to lose, and no build step runs
/// on them. Only the files named here are served: a request picks an entry of this table by name,
/// never a path on disk, so nothing else can be reached however the name is spelled.
enum ConsoleAssets {
    static let index = "index.html"

    static let byName: [String: ConsoleAsset] = [
        "index.html": ConsoleAsset(PackageResources.index_html, "text/html; charset=utf-8"),
        "console.css": ConsoleAsset(PackageResources.console_css, "text/css; charset=utf-8"),
        "icon.svg": ConsoleAsset(PackageResources.icon_svg, "image/svg+xml"),
        "main.js": ConsoleAsset(PackageResources.main_js, javaScript),
        "api.js": ConsoleAsset(PackageResources.api_js, javaScript),
        "event-stream.js": ConsoleAsset(PackageResources.event_stream_js, javaScript),
        "dom.js": ConsoleAsset(PackageResources.dom_js, javaScript),
        "format.js": ConsoleAsset(PackageResources.format_js, javaScript),
        "route.js": ConsoleAsset(PackageResources.route_js, javaScript),
        "sign-in.js": ConsoleAsset(PackageResources.sign_in_js, javaScript),
        "sessions-view.js": ConsoleAsset(PackageResources.sessions_view_js, javaScript),
        "session-view.js": ConsoleAsset(PackageResources.session_view_js, javaScript),
        "tasks-table.js": ConsoleAsset(PackageResources.tasks_table_js, javaScript),
        "progress-batch.js": ConsoleAsset(PackageResources.progress_batch_js, javaScript),
        "event-log.js": ConsoleAsset(PackageResources.event_log_js, javaScript),
        "deliveries-table.js": ConsoleAsset(PackageResources.deliveries_table_js, javaScript),
        "throughput-chart.js": ConsoleAsset(PackageResources.throughput_chart_js, javaScript),
    ]

    private static let javaScript = "text/javascript; charset=utf-8"
}
