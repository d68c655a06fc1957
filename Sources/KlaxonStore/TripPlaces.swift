import KlaxonCore

/// Which stored places serve a trip, decided once for every backend.
public enum TripPlaces {
    /// The forecasts a trip's days read: for each day, the nearest stored place within `radiusKm` of
    /// the day's stop, once per place and date, with the stop's own place name (the packing
    /// algorithm matches weather to days by it).
    public static func forecastDays(
        _ trip: Trip, places: [(place: String, latitude: Double, longitude: Double)], radiusKm: Double
    ) -> [(place: String, date: String, stopPlace: String)] {
        var out: [(place: String, date: String, stopPlace: String)] = []
        var seen: Set<String> = []
        for day in Packer.days(of: trip) {
            let stop = trip.stops[day.stopIndex]
            guard let lat = stop.latitude, let lon = stop.longitude else { continue }
            var best: (String, Double)? = nil
            for p in places {
                let d = Geo.distanceKm(lat1: lat, lon1: lon, lat2: p.latitude, lon2: p.longitude)
                if d <= radiusKm, d < (best?.1 ?? .infinity) { best = (p.place, d) }
            }
            guard let place = best?.0, seen.insert("\(place)|\(day.date)").inserted else { continue }
            out.append((place, day.date, stop.place))
        }
        return out
    }

    /// The first stop of a trip within `radiusKm` of a point (a weather alert's place), if any.
    public static func stop(of trip: Trip, near p: PlacePoint, radiusKm: Double) -> Int? {
        trip.stops.indices.first { i in
            guard let lat = trip.stops[i].latitude, let lon = trip.stops[i].longitude else { return false }
            return Geo.distanceKm(lat1: lat, lon1: lon, lat2: p.latitude, lon2: p.longitude) <= radiusKm
        }
    }
}
