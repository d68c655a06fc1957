/// The site's look: one inline style sheet and the sections in its navigation.
///
/// Text colours meet WCAG AA (4.5:1) on the backgrounds they are used on.
enum SiteStyle {
    static let sections: [(path: String, label: String)] = [
        ("/", "Overview"), ("/gauges", "Gauges"), ("/air", "Air"), ("/quakes", "Quakes"), ("/alerts", "Alerts"),
        ("/silences", "Silences"), ("/notifications", "Notifications"), ("/trips", "Trips"), ("/signin", "Sign in"),
    ]

    static let css = """
        :root { color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; background: #ffffff; }
        header.site { background: #12355b; padding: 0.5rem 1rem; }
        header.site nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
        header.site a { color: #ffffff; text-decoration: none; font-weight: 600; }
        header.site a:hover, header.site a:focus { text-decoration: underline; }
        main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
        h2 { font-size: 1.2rem; margin: 1.5rem 0 0.5rem; }
        a { color: #0b4f8a; }
        table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1rem; }
        th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #d0d4da; vertical-align: top; }
        th { background: #f2f4f7; }
        .muted { color: #4a5360; }
        svg { max-width: 100%; height: auto; }
        figure { margin: 0.5rem 0 1rem; }
        figure.chart svg { display: block; width: 100%; }
        .badge { display: inline-block; padding: 0.05rem 0.45rem; border-radius: 0.25rem; font-weight: 600; border: 1px solid #4a5360; white-space: nowrap; }
        nav.ranges { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0.5rem 0; }
        nav.ranges a.range { padding: 0.15rem 0.5rem; border: 1px solid #0b4f8a; border-radius: 0.25rem; text-decoration: none; }
        nav.ranges a.current { background: #0b4f8a; color: #ffffff; }
        nav.ranges form { display: flex; flex-wrap: wrap; gap: 0.25rem 0.5rem; align-items: center; }
        .multiples { display: grid; grid-template-columns: repeat(auto-fill, minmax(18rem, 1fr)); gap: 0.5rem 1rem; }
        figure.metric { margin: 0; border: 1px solid #d0d4da; border-radius: 0.25rem; padding: 0.25rem 0.5rem; }
        figure.metric svg { display: block; width: 100%; }
        figcaption { font-size: 0.95rem; }
        td.spark svg { width: 15rem; max-width: 40vw; }
        tr.alert.severity-critical td:first-child { border-left: 4px solid #B00020; }
        tr.alert.severity-warning td:first-child { border-left: 4px solid #8a5a00; }
        tr.alert.severity-info td:first-child { border-left: 4px solid #0b4f8a; }
        .error { color: #8b0000; font-weight: 600; }
        .advice { max-width: 48rem; }
        .table-scroll { overflow-x: auto; }
        @media (max-width: 40rem) {
            main { padding: 0.5rem; }
            table { font-size: 0.9rem; }
            th, td { padding: 0.25rem; }
            td.spark svg { width: 8rem; }
            /* A wide table scrolls inside itself; the page never scrolls sideways. */
            table { display: block; overflow-x: auto; }
            .badge { white-space: normal; }
            /* The alerts list, which people ack from on a phone, stacks each alert as a card: every column stays in
               view, each value under its column's name, instead of scrolling Since and Summary off the side. */
            table#alerts, table#alerts tbody, table#alerts tr, table#alerts td { display: block; width: 100%; }
            table#alerts thead { display: none; }
            table#alerts tr { border: 1px solid #d0d4da; border-radius: 0.25rem; margin: 0 0 0.5rem; padding: 0.25rem 0; }
            table#alerts td { border: 0; padding: 0.15rem 0.5rem; }
            table#alerts td::before { font-weight: 600; color: #4a5360; }
            table#alerts td:nth-child(1)::before { content: "Alert: "; }
            table#alerts td:nth-child(2)::before { content: "Ack: "; }
            table#alerts td:nth-child(3)::before { content: "Severity: "; }
            table#alerts td:nth-child(4)::before { content: "Rule: "; }
            table#alerts td:nth-child(5)::before { content: "Station: "; }
            table#alerts td:nth-child(6)::before { content: "Since: "; }
            table#alerts td:nth-child(7)::before { content: "Summary: "; }
        }
        """ + ownerCSS

    /// Sign-in, trips and actions (`Site+Owner.swift`, `Site+Actions.swift`).
    static let ownerCSS = """
        .session { display: flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 1rem; margin: 0 0 1rem; padding: 0.4rem 0.6rem; background: #f2f4f7; border-radius: 4px; }
        form.inline { display: inline; margin: 0; }
        form.stack { display: grid; gap: 0.3rem; max-width: 28rem; }
        form.stack label { font-weight: 600; margin-top: 0.4rem; }
        input { font: inherit; padding: 0.35rem 0.5rem; border: 1px solid #6b7480; border-radius: 4px; max-width: 100%; }
        button { font: inherit; padding: 0.3rem 0.8rem; color: #ffffff; background: #0b4f8a; border: 0; border-radius: 4px; cursor: pointer; }
        button:hover, button:focus { background: #12355b; }
        form.stack button { justify-self: start; margin-top: 0.6rem; }
        .problem { color: #8a1111; font-weight: 600; }
        .notice { margin: 0 0 1rem; padding: 0.4rem 0.6rem; border-left: 4px solid #0b4f8a; background: #f2f4f7; }
        .notice p { margin: 0.2rem 0; }
        .notice .warning { color: #6b4400; font-weight: 600; }
        tr.category th { background: #e3e8ef; text-transform: capitalize; }
        td.num, th.num { text-align: right; }
        mark { background: #fff1b8; color: #1a1a1a; padding: 0 0.2rem; }
        .acked { color: #4a5360; }
        div.scroll { overflow-x: auto; margin: 0.5rem 0 1rem; }
        div.scroll table { margin: 0; }
        """
}
