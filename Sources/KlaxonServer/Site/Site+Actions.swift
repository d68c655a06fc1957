import Hummingbird
import Plot

extension StatusSite {
    /// Ack an alert, add or expire a silence: POST forms with a CSRF token, for a team member
    /// signed in with the team token.
    static func addActions(to router: Router<BasicRequestContext>, site: Context) {
    }

    /// The ack form shown beside a firing alert (on the overview), or nothing when the viewer
    /// cannot act. `transitionID` is the firing transition's id.
    static func ackForm(transitionID: Int64, request: Request, site: Context) -> Node<HTML.BodyContext> {
        .empty
    }
}
