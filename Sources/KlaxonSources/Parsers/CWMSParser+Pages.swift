import Foundation

extension CWMSParser {
    /// Where a CWMS Data API page stands among the pages of its answer.
    public struct PageInfo: Sendable, Equatable {
        /// The cursor of the next page; nil on the last page.
        public var nextPage: String?
        /// The number of values the whole answer holds, over all its pages, when the server says.
        public var total: Int?
        public var pageSize: Int?

        public init(nextPage: String?, total: Int?, pageSize: Int?) {
            self.nextPage = nextPage
            self.total = total
            self.pageSize = pageSize
        }
    }

    /// The paging fields of a CWMS time series page (`next-page`, `total`, `page-size`); nil when the
    /// payload is not one.
    public static func pageInfo(_ data: Data) -> PageInfo? {
        struct Fields: Decodable {
            var nextPage: String?
            var total: Int?
            var pageSize: Int?
            enum CodingKeys: String, CodingKey {
                case nextPage = "next-page"
                case total
                case pageSize = "page-size"
            }

            // Each field on its own: an odd `total` must not hide a `next-page`.
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                nextPage = try? c.decodeIfPresent(String.self, forKey: .nextPage)
                total = try? c.decodeIfPresent(Int.self, forKey: .total)
                pageSize = try? c.decodeIfPresent(Int.self, forKey: .pageSize)
            }
        }
        guard let fields = try? JSONDecoder().decode(Fields.self, from: data) else { return nil }
        return PageInfo(
            nextPage: fields.nextPage.flatMap { $0.isEmpty ? nil : $0 },
            total: fields.total.flatMap { $0 >= 0 ? $0 : nil },
            pageSize: fields.pageSize)
    }
}
