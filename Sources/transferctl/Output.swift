import Foundation
import TransferdClient

/// Results on stdout: aligned tables (a bold header on a terminal that allows colour), or with
/// `--json` the API's objects, one JSON object a line, as the API sent them.
struct Output: Sendable {
    let json: Bool
    let replies: Replies

    struct Column<Row>: Sendable {
        let header: String
        let value: @Sendable (Row) -> String
        init(_ header: String, _ value: @escaping @Sendable (Row) -> String) {
            self.header = header
            self.value = value
        }
    }

    /// A line of transferctl's own (for what the API answers without a body).
    func jsonLine<Value: Encodable>(_ value: Value) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// The API's objects that `selection` picks out of the replies read, one a line.
    func jsonLines(_ selection: Replies.Selection) {
        for object in replies.objects(selection) { print(String(decoding: object, as: UTF8.self)) }
    }

    func rows<Row>(_ rows: [Row], _ columns: [Column<Row>], json selection: Replies.Selection) {
        if json { return jsonLines(selection) }
        print(Self.table(header: columns.map(\.header), rows: rows.map { row in columns.map { $0.value(row) } },
                         bold: Terminal.fancy(STDOUT_FILENO)), terminator: "")
    }

    /// One object as `field  value` lines, or one JSON line.
    func object<Row>(_ row: Row, _ fields: [Column<Row>], json selection: Replies.Selection) {
        if json { return jsonLines(selection) }
        print(Self.table(header: nil, rows: fields.map { [$0.header, $0.value(row)] }, bold: false), terminator: "")
    }

    /// A task just created without waiting: its id (or the task as JSON).
    func created(_ task: Components.Schemas.Task) {
        if json { jsonLines(.whole("createTask")) } else { print(task.id) }
    }

    /// Columns padded to their widest cell; the last column is not padded.
    static func table(header: [String]?, rows: [[String]], bold: Bool) -> String {
        let all = (header.map { [$0] } ?? []) + rows
        guard let count = all.first?.count else { return "" }
        let widths = (0..<count).map { column in all.map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        var text = ""
        if let header { text += (bold ? Terminal.colour(1, line(header)) : line(header)) + "\n" }
        for row in rows { text += line(row) + "\n" }
        return text
    }
}
