/// Every item of one of the API's lists, a page at a time: each page's `next` goes back as
/// `after` until it is null. Written by hand beside the generated code (`make client` leaves it).
public enum Pages {
    public static func all<Item>(_ page: (String?) async throws -> ([Item], String?)) async throws -> [Item] {
        var items: [Item] = []
        var after: String?
        repeat {
            let (found, next) = try await page(after)
            items += found
            after = next
        } while after != nil
        return items
    }
}
