import Hummingbird
import Plot

extension StatusSite {
    /// Sign-in and out with an owner's API token (a signed, HttpOnly, SameSite=Strict cookie),
    /// `/trips` and `/trips/NAME`.
    static func addOwnerPages(to router: Router<BasicRequestContext>, site: Context) {
    }
}
