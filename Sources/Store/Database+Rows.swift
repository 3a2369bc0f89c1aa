extension Database {
    /// Rows per `INSERT` statement in `insertRows`: many rows share a statement's fixed cost.
    static let rowsPerInsert = 32

    /// Inserts `count` rows with `head` (`INSERT … (columns) VALUES`), several rows per statement.
    /// Executing a statement costs the same however many rows it carries — a cursor opened on the
    /// table and each index, the halt, the reset — and for a one-row insert into an indexed table
    /// that fixed part was a third of the work. `row(i, &values)` appends row `i`'s `columns` values.
    public func insertRows(_ head: String, columns: Int, count: Int, row: (Int, inout [SQLValue]) -> Void) throws {
        var start = 0
        while start < count {
            let n = min(Database.rowsPerInsert, count - start)
            var values: [SQLValue] = []
            values.reserveCapacity(n * columns)
            for i in start..<start + n { row(i, &values) }
            try rowInsert(head, columns: columns, rows: n).bind(values).run()
            start += n
        }
    }

    /// The prepared statement inserting `rows` rows, reset.
    private func rowInsert(_ head: String, columns: Int, rows: Int) throws -> Statement {
        if let cached = rowInserts[head]?[rows] {
            cached.reset()
            return cached
        }
        let tuple = "(?" + String(repeating: ", ?", count: columns - 1) + ")"
        let insert = try statement(head + " " + tuple + String(repeating: ", " + tuple, count: rows - 1))
        rowInserts[head, default: Array(repeating: nil, count: Database.rowsPerInsert + 1)][rows] = insert
        return insert
    }
}
