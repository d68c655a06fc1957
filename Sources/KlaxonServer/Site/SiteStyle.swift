/// The site's look: one inline style sheet and the sections in its navigation.
///
/// Text colours meet WCAG AA (4.5:1) on the backgrounds they are used on.
enum SiteStyle {
    static let sections: [(path: String, label: String)] = [
        ("/", "Overview"), ("/gauges", "Gauges"), ("/air", "Air"), ("/quakes", "Quakes"), ("/trips", "Trips"),
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
        @media (max-width: 40rem) {
            main { padding: 0.5rem; }
            table { font-size: 0.9rem; }
            th, td { padding: 0.25rem; }
        }
        """
}
