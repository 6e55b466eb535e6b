"""Chat history of a coding assistant on Cascade River Transit's real-time arrivals platform ("arrivals"): an Elixir/Phoenix app (Ecto on PostgreSQL + PostGIS, Oban, Redis, LiveView dispatcher console, public JSON API) that ingests the agency's HASTUS-exported GTFS static feed and GTFS-realtime feeds from the AVL vendor Orbitrak.
It runs on the city's AKS cluster via Helm and GitHub Actions with Prometheus/Grafana and Sentry, built by a small team: Priya Raman (tech lead), Tomás Ferreira (GTFS ingestion), Kwame Asante (dispatch console), Dana Whitlock (city IT SRE) and Lena Hoffmann (product owner, Ops Control Center), with Rob Kellerman at Orbitrak and Sofia Lindqvist at the partner app Hopline as external contacts."""
from __future__ import annotations

from dsl import F, commit, read, run, session

J_FACT = [
    # ------------------------------------------------------------------ F01
    session(
        "avl-vehicle-positions-404-staging",
        ("u", "vehicle positions poller on staging is throwing 404s since ~8am, trip updates are fine. dispatch console map is frozen. can u look"),
        run('curl -sS -i -H "X-Orbitrak-Key: $ORBITRAK_API_KEY" https://feeds.orbitrak.net/crt/gtfsrt/VehiclePositions.pb'),
        ("r", '''HTTP/2 404
content-type: application/json; charset=utf-8
date: Tue, 04 Feb 2025 16:12:09 GMT
x-orbitrak-request-id: 7c1e0a9d-4b2f-4e61-9f0c-3d8e5a17b6c2
content-length: 236

{"error":"feed_moved","message":"VehiclePositions for tenant 'crt' is now served by the AVL gateway. Update your client to https://avl-gw.orbitrak.net:8443/crt/gtfsrt/VehiclePositions.pb (notice ORB-2291)","trip_updates":"unchanged"}'''),
        run('grep -n "VehiclePositions" config/runtime.exs; grep -n -A12 "egress:" deploy/helm/arrivals/templates/networkpolicy.yaml'),
        ("r", '''31:      System.get_env("ORBITRAK_VEHICLE_POSITIONS_URL", "https://feeds.orbitrak.net/crt/gtfsrt/VehiclePositions.pb"),
18:  egress:
19-    - to:
20-        - namespaceSelector: {}
21-      ports:
22-        - port: 53
23-          protocol: UDP
24-    - to:
25-        - ipBlock:
26-            cidr: 0.0.0.0/0
27-      ports:
28-        - port: 443
29-          protocol: TCP
30-        - port: 5432'''),
        ("a", '''Orbitrak moved the VehiclePositions feed. The old URL now returns a 404 with `feed_moved` in the body, and the new location is

`https://avl-gw.orbitrak.net:8443/crt/gtfsrt/VehiclePositions.pb` (their "AVL gateway", notice ORB-2291).

TripUpdates stayed where it was, which is why that poller is still happy.

Two things need to change on our side:

1. The default in `config/runtime.exs` line 31. Staging and prod actually get `ORBITRAK_VEHICLE_POSITIONS_URL` from the `arrivals-orbitrak` secret, so that secret needs the new URL too. I can't touch it from here.
2. The egress NetworkPolicy only allows outbound TCP 443 (plus DNS and 5432). The gateway listens on **8443**, so even with the right URL the pods would just sit in a connect timeout.

Want me to change both files?'''),
        ("u", "ugh yes, rob mentioned some 'avl gateway migration' on the last vendor call, i thought that was next month. do both, ill update the staging secret myself"),
        ("c", F, {"operation": "replace_string", "path": "config/runtime.exs",
                  "old_string": '      System.get_env("ORBITRAK_VEHICLE_POSITIONS_URL", "https://feeds.orbitrak.net/crt/gtfsrt/VehiclePositions.pb"),',
                  "new_string": '      System.get_env("ORBITRAK_VEHICLE_POSITIONS_URL", "https://avl-gw.orbitrak.net:8443/crt/gtfsrt/VehiclePositions.pb"),'}),
        ("r", "Replaced 1 occurrence in config/runtime.exs"),
        ("c", F, {"operation": "replace_string", "path": "deploy/helm/arrivals/templates/networkpolicy.yaml",
                  "old_string": "        - port: 443\n          protocol: TCP\n",
                  "new_string": "        - port: 443\n          protocol: TCP\n        # Orbitrak AVL gateway (VehiclePositions only), notice ORB-2291\n        - port: 8443\n          protocol: TCP\n"}),
        ("r", "Replaced 1 occurrence in deploy/helm/arrivals/templates/networkpolicy.yaml"),
        ("u", "secret updated + helm upgrade on staging, positions flowing again. commit"),
        *commit("Point VehiclePositions at Orbitrak AVL gateway (avl-gw.orbitrak.net:8443), allow egress on 8443"),
    ),
    # ------------------------------------------------------------------ F02
    session(
        "owl-routes-next-day-predictions",
        ("u", "lena forwarded rider complaints: N5 and N12 (the owl routes) show 'no upcoming departures' on the website after midnight, and at some stops they show the 11:40pm trip which is tomorrow night's. realtime is fine once the bus is actually out, so this is the schedule fallback. can u dig in"),
        read("lib/arrivals/predictions/scheduled.ex"),
        ("r", r'''defmodule Arrivals.Predictions.Scheduled do
  @moduledoc """
  Schedule-based departures for stops/trips that have no realtime TripUpdate.
  Used by the public API as a fallback and by the transit center boards.
  """
  import Ecto.Query

  alias Arrivals.Repo
  alias Arrivals.Gtfs
  alias Arrivals.Gtfs.{StopTime, Trip}

  @tz "America/Los_Angeles"

  def upcoming(stop_id, %DateTime{} = now, limit \\ 10) do
    local_now = DateTime.shift_zone!(now, @tz)
    service_date = DateTime.to_date(local_now)
    secs_now = local_now.hour * 3600 + local_now.minute * 60 + local_now.second
    service_ids = Gtfs.active_service_ids(service_date)

    from(st in StopTime,
      join: t in Trip,
      on: t.trip_id == st.trip_id and t.feed_version == st.feed_version,
      where: st.stop_id == ^stop_id and st.feed_version == ^Gtfs.active_version(),
      where: t.service_id in ^service_ids,
      # times past 24:00 were crashing DateTime.new!, see #142
      where: st.departure_secs >= ^secs_now and st.departure_secs < 86_400,
      order_by: st.departure_secs,
      limit: ^limit,
      select: {st, t}
    )
    |> Repo.all()
    |> Enum.map(fn {st, t} -> to_departure(st, t, service_date) end)
  end

  defp to_departure(st, trip, service_date) do
    {:ok, midnight} = DateTime.new(service_date, ~T[00:00:00], @tz)

    %{
      trip_id: trip.trip_id,
      route_id: trip.route_id,
      headsign: trip.trip_headsign,
      departs_at: DateTime.add(midnight, st.departure_secs, :second),
      source: :schedule
    }
  end
end
'''),
        ("a", '''Found it. There are three problems stacked in `upcoming/3`, and together they explain both symptoms Lena forwarded.

**1. It only ever looks at today's service date.** In GTFS a night trip belongs to the service day it *started* on. The N5 that leaves downtown at 1:10am Wednesday is a Tuesday trip with `departure_time` 25:10:00 (`departure_secs = 90600`). After midnight we compute `service_date` as Wednesday, so Tuesday's late trips are never queried at all.

**2. The `departure_secs < 86_400` filter** (the workaround from #142, when `DateTime.new!` crashed on 25:xx times) throws away every after-midnight stop time, Wednesday's included. Between midnight and the end of owl service the query can therefore only match Wednesday's 23:xx trips, i.e. tomorrow night's, or nothing at all if the stop isn't served before midnight. That's exactly "no upcoming departures" at some stops and "the 11:40pm trip" at others.

**3. Adding seconds to local midnight is subtly wrong even once 1 and 2 are fixed.** GTFS doesn't measure stop times from midnight. The spec measures them from "noon minus 12h" on the service date. On normal days that's the same instant as midnight, but on the two DST-change days it isn't: on the fall-back night the origin is 01:00 PDT, on spring-forward it's 23:00 PST the evening before. Owl trips on those nights would be an hour off.

So the fix is to stop using midnight as the time origin. I'd add a small `Arrivals.ServiceDay` module: `anchor/1` returns noon minus 12h local time for a service date, `at/2` = anchor + seconds, and `candidate_dates/1` gives `[yesterday, today]`. Then `upcoming/3` queries both service dates (each with its own active service_ids), builds absolute `departs_at` from `ServiceDay.at/2`, keeps the ones `>= now`, sorts and takes `limit`. The `< 86_400` hack can go.'''),
        ("u", "makes sense. do it, and add a test for the november fallback night pls"),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals/service_day.ex", "content": r'''defmodule Arrivals.ServiceDay do
  @moduledoc """
  GTFS service-day arithmetic.

  GTFS stop times are seconds since "noon minus 12h" on the service date (local
  time), NOT since midnight, and can exceed 24:00:00 for trips that run past
  midnight. On DST change days noon minus 12h is 01:00 (fall back) or 23:00 the
  previous evening (spring forward).
  """
  @tz "America/Los_Angeles"

  @doc "Time origin for GTFS times on `service_date`: local noon minus 12h."
  def anchor(%Date{} = service_date, tz \\ @tz) do
    service_date
    |> DateTime.new!(~T[12:00:00], tz)
    |> DateTime.add(-12 * 3600, :second)
  end

  @doc "Absolute time of a GTFS time (in seconds) on `service_date`."
  def at(%Date{} = service_date, secs, tz \\ @tz), do: DateTime.add(anchor(service_date, tz), secs, :second)

  @doc "Service dates that can have trips running at `now`: yesterday (after-midnight trips) and today."
  def candidate_dates(%DateTime{} = now, tz \\ @tz) do
    today = now |> DateTime.shift_zone!(tz) |> DateTime.to_date()
    [Date.add(today, -1), today]
  end

  @doc "Seconds elapsed since the anchor of `service_date` at `now` (may be > 86_400 or negative)."
  def secs_since_anchor(%Date{} = service_date, %DateTime{} = now, tz \\ @tz),
    do: DateTime.diff(now, anchor(service_date, tz), :second)
end
'''}),
        ("r", "Created lib/arrivals/service_day.ex"),
        ("c", F, {"operation": "create_file", "path": "test/arrivals/service_day_test.exs", "content": r'''defmodule Arrivals.ServiceDayTest do
  use ExUnit.Case, async: true
  alias Arrivals.ServiceDay

  test "anchor is local midnight on a normal day" do
    assert ServiceDay.anchor(~D[2025-02-04]) ==
             DateTime.new!(~D[2025-02-04], ~T[00:00:00], "America/Los_Angeles")
  end

  test "25:10:00 on a service date is 01:10 the next calendar day" do
    at = ServiceDay.at(~D[2025-02-04], 25 * 3600 + 10 * 60)
    assert DateTime.to_naive(at) == ~N[2025-02-05 01:10:00]
  end

  test "fall-back night: anchor is 01:00 PDT, not midnight" do
    # 2024-11-03: 02:00 PDT -> 01:00 PST. noon PST minus 12h = 08:00 UTC = 01:00 PDT
    anchor = ServiceDay.anchor(~D[2024-11-03])
    assert DateTime.to_naive(anchor) == ~N[2024-11-03 01:00:00]
    assert anchor.zone_abbr == "PDT"
  end

  test "spring-forward night: anchor is 23:00 PST the evening before" do
    assert DateTime.to_naive(ServiceDay.anchor(~D[2025-03-09])) == ~N[2025-03-08 23:00:00]
  end

  test "candidate dates after midnight include yesterday" do
    now = DateTime.new!(~D[2025-02-05], ~T[00:40:00], "America/Los_Angeles")
    assert ServiceDay.candidate_dates(now) == [~D[2025-02-04], ~D[2025-02-05]]
  end
end
'''}),
        ("r", "Created test/arrivals/service_day_test.exs"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/predictions/scheduled.ex",
                  "old_string": r'''  @tz "America/Los_Angeles"

  def upcoming(stop_id, %DateTime{} = now, limit \\ 10) do
    local_now = DateTime.shift_zone!(now, @tz)
    service_date = DateTime.to_date(local_now)
    secs_now = local_now.hour * 3600 + local_now.minute * 60 + local_now.second
    service_ids = Gtfs.active_service_ids(service_date)

    from(st in StopTime,
      join: t in Trip,
      on: t.trip_id == st.trip_id and t.feed_version == st.feed_version,
      where: st.stop_id == ^stop_id and st.feed_version == ^Gtfs.active_version(),
      where: t.service_id in ^service_ids,
      # times past 24:00 were crashing DateTime.new!, see #142
      where: st.departure_secs >= ^secs_now and st.departure_secs < 86_400,
      order_by: st.departure_secs,
      limit: ^limit,
      select: {st, t}
    )
    |> Repo.all()
    |> Enum.map(fn {st, t} -> to_departure(st, t, service_date) end)
  end

  defp to_departure(st, trip, service_date) do
    {:ok, midnight} = DateTime.new(service_date, ~T[00:00:00], @tz)

    %{
      trip_id: trip.trip_id,
      route_id: trip.route_id,
      headsign: trip.trip_headsign,
      departs_at: DateTime.add(midnight, st.departure_secs, :second),
      source: :schedule
    }
  end''',
                  "new_string": r'''  alias Arrivals.ServiceDay

  @tz "America/Los_Angeles"

  def upcoming(stop_id, %DateTime{} = now, limit \\ 10) do
    now
    |> ServiceDay.candidate_dates(@tz)
    |> Enum.flat_map(fn service_date ->
      min_secs = ServiceDay.secs_since_anchor(service_date, now, @tz)

      stop_id
      |> query(service_date, min_secs, limit)
      |> Repo.all()
      |> Enum.map(fn {st, t} -> to_departure(st, t, service_date) end)
    end)
    |> Enum.sort_by(& &1.departs_at, DateTime)
    |> Enum.take(limit)
  end

  defp query(stop_id, service_date, min_secs, limit) do
    service_ids = Gtfs.active_service_ids(service_date)

    from(st in StopTime,
      join: t in Trip,
      on: t.trip_id == st.trip_id and t.feed_version == st.feed_version,
      where: st.stop_id == ^stop_id and st.feed_version == ^Gtfs.active_version(),
      where: t.service_id in ^service_ids,
      where: st.departure_secs >= ^min_secs,
      order_by: st.departure_secs,
      limit: ^limit,
      select: {st, t}
    )
  end

  defp to_departure(st, trip, service_date) do
    %{
      trip_id: trip.trip_id,
      route_id: trip.route_id,
      headsign: trip.trip_headsign,
      departs_at: ServiceDay.at(service_date, st.departure_secs, @tz),
      source: :schedule
    }
  end'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals/predictions/scheduled.ex"),
        run("mix test test/arrivals/service_day_test.exs test/arrivals/predictions/scheduled_test.exs"),
        ("r", '''Compiling 2 files (.ex)
Running ExUnit with seed: 604117, max_cases: 16

...........
Finished in 0.4 seconds (0.1s async, 0.3s sync)
11 tests, 0 failures'''),
        ("a", "All green: 5 new `ServiceDay` tests (including the Nov 3 fall-back and Mar 9 spring-forward anchors) and the 6 existing scheduled-departure tests. The `< 86_400` filter and the #142 comment are gone. Worth adding one more test to `scheduled_test.exs` with an N5 stop time at 25:10 queried at 00:40 before you commit. Should I?"),
    ),
    # ------------------------------------------------------------------ F03
    session(
        "winter-pick-gtfs-import-prod",
        ("u", "winter pick goes live sunday jan 26 and marisol dropped the new gtfs zip on the shared drive. i need it loaded in prod ahead of time but NOT used until the 26th. do we have something for that or do i have to do it at 4am"),
        read("lib/arrivals/release.ex"),
        ("r", r'''defmodule Arrivals.Release do
  @moduledoc """
  Release tasks. Mix is not available in the prod image, so these are run with
  `bin/arrivals eval 'Arrivals.Release.fun(...)'` inside a pod.
  """
  @app :arrivals

  def migrate do
    load_app()

    for repo <- repos() do
      {:ok, _, _} = Ecto.Migrator.with_repo(repo, &Ecto.Migrator.run(&1, :up, all: true))
    end
  end

  @doc """
  Loads a GTFS static zip as a new feed version.

    * `:version`  - label for the feed version (default: feed_info.txt feed_version)
    * `:activate` - switch API/predictions to it right away (default: `true`)
  """
  def import_gtfs(path, opts \\ []) do
    with_repo(fn ->
      {:ok, summary} = Arrivals.Gtfs.StaticImporter.import(path, opts)
      IO.puts(Arrivals.Gtfs.StaticImporter.format_summary(summary))
    end)
  end

  @doc """
  Makes `version` the active feed. Running nodes pick it up on their next
  RefreshActiveFeed tick (every 60s). The previous two versions are kept.
  """
  def activate_feed(version) do
    with_repo(fn ->
      :ok = Arrivals.Gtfs.Feeds.activate!(version)
      IO.puts("active feed is now #{version}")
    end)
  end

  def list_feeds do
    with_repo(fn ->
      for f <- Arrivals.Gtfs.Feeds.list() do
        state = if f.active, do: "ACTIVE  ", else: "inactive"
        IO.puts("#{String.pad_trailing(f.version, 16)} #{state} #{f.imported_at}  #{f.trip_count} trips")
      end
    end)
  end

  defp with_repo(fun) do
    load_app()
    {:ok, _, _} = Ecto.Migrator.with_repo(Arrivals.Repo, fn _repo -> fun.() end)
  end

  defp repos, do: Application.fetch_env!(@app, :ecto_repos)
  defp load_app, do: Application.load(@app)
end
'''),
        ("a", '''No 4am import needed, this is already supported. `import_gtfs/2` takes `activate: false`, which loads the zip as a new feed version without switching anything over. A separate call flips the active version later, and the running nodes pick it up within 60s (RefreshActiveFeed), so no restart.

Plan:
1. import into **staging** with `activate: false` and check the validation summary
2. same on prod
3. on the 26th, one `eval` call to activate it

Want me to do the staging dry run now? I'll need the path of the zip.'''),
        ("u", "yes staging first. its at ~/Downloads/CRT_GTFS_Winter2025.zip, call the version 2025-01-pick"),
        run('''POD=$(kubectl -n arrivals-staging get pod -l app=arrivals-web -o jsonpath='{.items[0].metadata.name}') && kubectl -n arrivals-staging cp ~/Downloads/CRT_GTFS_Winter2025.zip $POD:/tmp/gtfs-2025-01.zip && kubectl -n arrivals-staging exec $POD -- bin/arrivals eval 'Arrivals.Release.import_gtfs("/tmp/gtfs-2025-01.zip", version: "2025-01-pick", activate: false)' && kubectl -n arrivals-staging exec $POD -- bin/arrivals eval 'Arrivals.Release.list_feeds()\''''),
        ("r", '''20:41:07.518 [info] gtfs import 2025-01-pick: unpacked 11 files (38.4 MB)
20:41:09.002 [info] gtfs import 2025-01-pick: agency=1 routes=42 stops=7931 calendar=6 calendar_dates=88
20:41:31.774 [info] gtfs import 2025-01-pick: trips=39118 shapes=1204 stop_times=1946027 (COPY)
20:41:33.460 [info] gtfs import 2025-01-pick: validation ok (0 errors, 3 warnings: stops without parent_station)
imported 2025-01-pick (inactive) in 26.1s
2024-09-pick     ACTIVE   2024-09-03 17:22:41Z  38455 trips
2025-01-pick     inactive 2025-01-21 20:41:33Z  39118 trips
2024-06-pick     inactive 2024-06-04 16:03:12Z  37902 trips'''),
        ("a", '''Staging dry run is clean: 0 errors, 42 routes (one more than the fall pick), 39,118 trips, and `2024-09-pick` is still the active version. The 3 warnings are the usual stops without a `parent_station`.

**Prod, ahead of time**: the same two commands against namespace `arrivals` instead of `arrivals-staging`, still with `activate: false`.

**On Sunday the 26th**, in the gap between the last Saturday owl trip of the old service (~04:30) and the first Sunday trip (~05:10):

```
kubectl -n arrivals exec deploy/arrivals-web -- bin/arrivals eval 'Arrivals.Release.activate_feed("2025-01-pick")'
```

If anything looks wrong afterwards, rolling back is the same call with `"2024-09-pick"`. It's still in the DB because we keep the last two versions.'''),
        ("u", "perfect. write that down in docs/runbooks/gtfs-pick.md so i dont have to figure it out again in may, and commit"),
        ("c", F, {"operation": "create_file", "path": "docs/runbooks/gtfs-pick.md", "content": '''# Loading a new pick (GTFS static service change)

Service Planning (Marisol Ortega) exports the GTFS zip from HASTUS 1-2 weeks before each pick.
Load it early as an **inactive** feed version, then switch over on the service change date.

## 1. Dry run on staging

    POD=$(kubectl -n arrivals-staging get pod -l app=arrivals-web -o jsonpath='{.items[0].metadata.name}')
    kubectl -n arrivals-staging cp CRT_GTFS_<pick>.zip $POD:/tmp/gtfs.zip
    kubectl -n arrivals-staging exec $POD -- bin/arrivals eval 'Arrivals.Release.import_gtfs("/tmp/gtfs.zip", version: "<YYYY-MM>-pick", activate: false)'
    kubectl -n arrivals-staging exec $POD -- bin/arrivals eval 'Arrivals.Release.list_feeds()'

Validation must say `0 errors`. "stops without parent_station" warnings are normal.

## 2. Same on prod

Namespace `arrivals`, still `activate: false`. The current feed keeps serving.

## 3. Activate on the service change date

Between the last owl trip of the old service (~04:30) and the first trip of the new one (~05:10):

    kubectl -n arrivals exec deploy/arrivals-web -- bin/arrivals eval 'Arrivals.Release.activate_feed("<YYYY-MM>-pick")'

Nodes pick up the new active version within 60s (RefreshActiveFeed). No restart needed.

## Rollback

    kubectl -n arrivals exec deploy/arrivals-web -- bin/arrivals eval 'Arrivals.Release.activate_feed("<previous>-pick")'

The previous two feed versions are kept in the DB.
'''}),
        ("r", "Created docs/runbooks/gtfs-pick.md"),
        *commit("docs: runbook for loading a pick inactive and activating it on service change day"),
    ),
    # ------------------------------------------------------------------ F04
    session(
        "orbitrak-contact-ops-doc",
        ("u", "fyi for future: orbitrak support portal tickets go into a black hole. the person who actually fixes stuff on their side is Rob Kellerman (integration engineer), rkellerman@orbitrak.net. if the feed is down outside business hours email their NOC at noc-pdx@orbitrak.net and cc rob. he's on pacific time too. add that to the contacts in docs/operations.md"),
        read("docs/operations.md"),
        ("r", '''# Operations

## Environments

| env     | namespace          | url                                         |
|---------|--------------------|---------------------------------------------|
| staging | `arrivals-staging` | https://arrivals-staging.crt.internal       |
| prod    | `arrivals`         | https://api.cascaderiver.gov/transit        |

## On-call

Business hours only (Mon-Fri 07:00-18:00). Out-of-hours pages for the public API go to
the City IT NOC, who escalate to Priya.

## Contacts

- City IT / AKS cluster / Prometheus & Grafana: Dana Whitlock (#city-it-platform)
- Ops Control Center (dispatchers): Lena Hoffmann
- Orbitrak (AVL vendor): support portal https://support.orbitrak.net, project CRT-RT
- Hopline (partner app): Sofia Lindqvist, via the shared Slack channel #ext-hopline
'''),
        ("c", F, {"operation": "replace_string", "path": "docs/operations.md",
                  "old_string": "- Orbitrak (AVL vendor): support portal https://support.orbitrak.net, project CRT-RT\n",
                  "new_string": "- Orbitrak (AVL vendor): support portal https://support.orbitrak.net, project CRT-RT\n"
                                "  - the portal is slow/ignored in practice. Go straight to **Rob Kellerman**, integration\n"
                                "    engineer, rkellerman@orbitrak.net (Pacific time).\n"
                                "  - feed down outside business hours: email their NOC, noc-pdx@orbitrak.net, and cc Rob.\n"}),
        ("r", "Replaced 1 occurrence in docs/operations.md"),
        ("a", "Added under the Orbitrak bullet in Contacts: Rob as the go-to person, and the NOC address for out-of-hours outages with Rob on cc. I left the portal line in since the project code CRT-RT is still what they ask for."),
        ("u", "also note that api key rotation goes through rob. keys rotate yearly, the current one expires 2025-06-30, and he needs ~2 weeks notice to issue a new one"),
        ("c", F, {"operation": "replace_string", "path": "docs/operations.md",
                  "old_string": "  - feed down outside business hours: email their NOC, noc-pdx@orbitrak.net, and cc Rob.\n",
                  "new_string": "  - feed down outside business hours: email their NOC, noc-pdx@orbitrak.net, and cc Rob.\n"
                                "  - API key (`ORBITRAK_API_KEY`) rotation also goes through Rob. Keys rotate yearly; the\n"
                                "    current key expires **2025-06-30**. Ask him ~2 weeks ahead for the new one.\n"}),
        ("r", "Replaced 1 occurrence in docs/operations.md"),
        ("u", "commit"),
        *commit("docs: Orbitrak escalation contacts and API key rotation"),
    ),
    # ------------------------------------------------------------------ F05
    session(
        "hopline-429s-partner-tier",
        ("u", "sofia from hopline says they get 429s at peak (7-9am). they poll /api/v1/predictions?route_id=X every 15s for every route plus /api/v1/vehicles. whats their limit and is that why"),
        read("config/config.exs"),
        ("r", '''...

config :arrivals, ArrivalsWeb.Plugs.RateLimit,
  redis: :arrivals_redix,
  # requests per fixed 60s window, keyed by api key id (client ip for anonymous)
  tiers: %{
    anonymous: 60,
    standard: 600,
    partner: 1_200,
    internal: :unlimited
  }

config :arrivals, Oban,
  repo: Arrivals.Repo,
...'''),
        run('''psql "$PROD_RO_URL" -c "select id, owner, tier, created_at::date from api_keys where owner ilike '%hopline%';" && kubectl -n arrivals logs -l app=arrivals-web --since=24h --max-log-requests=6 | grep 'rate_limited' | grep 'key_id=14' | awk '{print substr($1,1,2)":00"}' | sort | uniq -c'''),
        ("r", ''' id |     owner     |  tier   | created_at
----+---------------+---------+------------
 14 | Hopline Inc.  | partner | 2023-05-11
(1 row)

    96 06:00
  4318 07:00
  3907 08:00
   122 09:00
    14 17:00'''),
        ("a", '''Yes, that's why. Hopline is key 14 on the `partner` tier, which is **1,200 requests per 60s window**, and they got ~8,200 429s between 07:00 and 09:00 yesterday.

Their per-route polling alone would be fine: 42 routes × 4 polls/min + vehicles ≈ 172/min. The rest comes from per-stop `/api/v1/stops/:id/predictions` calls. Hopline proxies their app users' stop lookups through to us, so their volume grows with ridership, and at AM peak they're running ~1,400-1,500/min.

Options: raise the partner tier, or ask them to cache per-stop responses for 15s on their side (our data doesn't change faster than that anyway). Raising the tier is a one-line config change, but it applies to every partner key (currently only Hopline and the county's 511 service).'''),
        ("u", "priya ok'd raising partner tier to 2400/min. ONLY partner, anonymous and standard stay as is. reason: they're our biggest rider-facing channel after our own app, ~40% of realtime lookups, and their traffic is real riders so it scales with ridership"),
        ("c", F, {"operation": "replace_string", "path": "config/config.exs",
                  "old_string": "    partner: 1_200,\n",
                  "new_string": "    # raised from 1_200 (Priya, Jan 2025): Hopline proxies rider lookups (~40% of realtime\n"
                                "    # traffic) and hit ~1.5k/min at AM peak. Only partner tier; others unchanged.\n"
                                "    partner: 2_400,\n"}),
        ("r", "Replaced 1 occurrence in config/config.exs"),
        run("mix test test/arrivals_web/plugs/rate_limit_test.exs"),
        ("r", '''Running ExUnit with seed: 88123, max_cases: 16

.......
Finished in 0.3 seconds (0.0s async, 0.3s sync)
7 tests, 0 failures'''),
        ("u", "commit, mention priya approved it"),
        *commit("Raise partner rate-limit tier 1_200 -> 2_400 req/min (approved by Priya)\n\nHopline proxies rider stop lookups and hit ~1.5k/min at AM peak.\nAnonymous and standard tiers unchanged."),
    ),
    # ------------------------------------------------------------------ F06
    session(
        "new-laptop-ecto-create-fails",
        ("u", "new laptop. docker compose up is fine but mix ecto.create says role postgres doesnt exist?? wtf"),
        run("mix ecto.create"),
        ("r", '''Compiling 214 files (.ex)
Generated arrivals app
** (Mix) The database for Arrivals.Repo couldn't be created: FATAL 28000 (invalid_authorization_specification) role "postgres" does not exist'''),
        read("docker-compose.yml"),
        ("r", '''services:
  db:
    image: postgis/postgis:16-3.4
    environment:
      POSTGRES_USER: postgres
      POSTGRES_PASSWORD: postgres
    ports:
      # host 5433 so it doesn't fight with a local Postgres.app / homebrew postgres on 5432
      - "5433:5432"
    volumes:
      - pgdata:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U postgres"]
      interval: 5s

  redis:
    image: redis:7-alpine
    ports:
      - "6380:6379"

volumes:
  pgdata:
'''),
        read("config/dev.exs"),
        ("r", '''import Config

config :arrivals, Arrivals.Repo,
  url: System.get_env("DATABASE_URL", "ecto://postgres:postgres@localhost:5433/arrivals_dev"),
  types: Arrivals.PostgresTypes,
  stacktrace: true,
  show_sensitive_data_on_connection_error: true,
  pool_size: 10

config :arrivals, :redis_url, System.get_env("REDIS_URL", "redis://localhost:6380/0")
...'''),
        run("env | grep -iE 'database_url|redis_url|^PG'"),
        ("r", '''DATABASE_URL=postgres://postgres@localhost:5432/ledger_dev
PGHOST=localhost'''),
        ("a", '''You have a `DATABASE_URL` exported in your shell pointing at `localhost:5432/ledger_dev`, which looks like it's left over from another project. `config/dev.exs` only falls back to our default when `DATABASE_URL` is unset, so Ecto is talking to whatever Postgres is on 5432 on the laptop (probably a homebrew one with no `postgres` role), not the compose container.

Our compose file deliberately publishes PostGIS on host port **5433** (and Redis on 6380) so it doesn't collide with a local Postgres on 5432. Either:

- `unset DATABASE_URL` (and remove it from wherever it's exported), or
- if you want it explicit: `export DATABASE_URL=ecto://postgres:postgres@localhost:5433/arrivals_dev`

then `mix ecto.setup`.'''),
        ("u", "ah its in my dotfiles from the old job lol. removed, ecto.setup worked. thanks"),
    ),
    # ------------------------------------------------------------------ F07
    session(
        "feed-lag-metric-missing-in-prometheus",
        ("u", '''dana says our new feed lag metric isnt reaching the alert routing. her msg: "everything your app exports to the shared prometheus has to start with crt_rt_ , the recording rules and the alertmanager route for your team match {__name__=~"crt_rt_.*"}. anything else falls to the default receiver which is nobody". fix pls'''),
        read("lib/arrivals_web/telemetry.ex"),
        ("r", r'''defmodule ArrivalsWeb.Telemetry do
  use Supervisor
  import Telemetry.Metrics

  def start_link(arg), do: Supervisor.start_link(__MODULE__, arg, name: __MODULE__)

  @impl true
  def init(_arg) do
    children = [
      {:telemetry_poller, measurements: periodic_measurements(), period: 10_000},
      {TelemetryMetricsPrometheus, metrics: prometheus_metrics(), port: 9568}
    ]

    Supervisor.init(children, strategy: :one_for_one)
  end

  def prometheus_metrics do
    [
      counter("crt_rt.feed.poll.count",
        event_name: [:arrivals, :feed, :poll, :stop],
        tags: [:feed, :status]
      ),
      distribution("crt_rt.feed.poll.duration.milliseconds",
        event_name: [:arrivals, :feed, :poll, :stop],
        measurement: :duration,
        unit: {:native, :millisecond},
        tags: [:feed],
        reporter_options: [buckets: [50, 100, 250, 500, 1000, 2500, 5000]]
      ),
      distribution("crt_rt.api.request.duration.milliseconds",
        event_name: [:phoenix, :endpoint, :stop],
        measurement: :duration,
        unit: {:native, :millisecond},
        tags: [:route],
        tag_values: &route_tag/1,
        reporter_options: [buckets: [5, 10, 25, 50, 100, 250, 1000]]
      ),
      last_value("arrivals.feed.lag.seconds",
        event_name: [:arrivals, :feed, :lag],
        measurement: :seconds,
        tags: [:feed]
      ),
      last_value("crt_rt.vehicles.active.count",
        event_name: [:arrivals, :vehicles],
        measurement: :active
      )
    ]
  end

  defp periodic_measurements, do: [{Arrivals.Realtime.Stats, :emit, []}]

  defp route_tag(%{conn: conn}), do: %{route: Phoenix.Router.route_info(ArrivalsWeb.Router, conn.method, conn.request_path, "")[:route] || "unknown"}
end
'''),
        ("a", "Every other metric here starts with `crt_rt.`, which TelemetryMetricsPrometheus turns into `crt_rt_...` when it swaps dots for underscores. The new gauge was named `arrivals.feed.lag.seconds`, so it got exported as `arrivals_feed_lag_seconds`, and Dana's rules never match it. I'll rename it and leave a comment so the next metric doesn't go the same way. The telemetry event stays `[:arrivals, :feed, :lag]`, so nothing that emits it changes."),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/telemetry.ex",
                  "old_string": '''  def prometheus_metrics do
    [
''',
                  "new_string": '''  # Metric names MUST start with "crt_rt." (exported as crt_rt_*): the city's shared
  # Prometheus recording rules and our Alertmanager route match {__name__=~"crt_rt_.*"}.
  # Anything else goes to the default receiver and nobody gets paged. (Dana, City IT)
  def prometheus_metrics do
    [
'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/telemetry.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/telemetry.ex",
                  "old_string": '      last_value("arrivals.feed.lag.seconds",',
                  "new_string": '      last_value("crt_rt.feed.lag.seconds",'}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/telemetry.ex"),
        run("iex -S mix phx.server >/tmp/phx.log 2>&1 & sleep 25; curl -s localhost:9568/metrics | grep -i lag"),
        ("r", '''# HELP crt_rt_feed_lag_seconds
# TYPE crt_rt_feed_lag_seconds gauge
crt_rt_feed_lag_seconds{feed="trip_updates"} 6.0
crt_rt_feed_lag_seconds{feed="vehicle_positions"} 4.0'''),
        ("u", "nice. commit"),
        *commit("Rename feed lag gauge to crt_rt_feed_lag_seconds so the shared Prometheus alert routing picks it up"),
    ),
    # ------------------------------------------------------------------ F08
    session(
        "raw-feed-archive-for-otp-analysis",
        ("u", "lena wants on-time performance for route 7 for all of last october. do we keep the raw realtime feeds somewhere or only the computed predictions?"),
        read("lib/arrivals/workers/archive_raw_feed.ex"),
        ("r", r'''defmodule Arrivals.Workers.ArchiveRawFeed do
  @moduledoc """
  Stores every raw GTFS-rt protobuf we fetch, gzipped, so feeds can be replayed or
  analyzed later. Enqueued by the pollers after each successful fetch.
  """
  use Oban.Worker, queue: :archive, max_attempts: 5

  alias ExAws.S3

  def enqueue(feed, body) do
    ref = Arrivals.Realtime.BlobCache.put(body)

    %{"feed" => to_string(feed), "fetched_at" => DateTime.utc_now(), "blob_ref" => ref}
    |> new()
    |> Oban.insert()
  end

  @impl Oban.Worker
  def perform(%Oban.Job{args: %{"feed" => feed, "fetched_at" => fetched_at, "blob_ref" => ref}}) do
    with {:ok, body} <- Arrivals.Realtime.BlobCache.fetch(ref),
         {:ok, ts, 0} <- DateTime.from_iso8601(fetched_at) do
      key = Path.join(["raw", feed, Calendar.strftime(ts, "%Y/%m/%d"), Calendar.strftime(ts, "%H%M%S") <> ".pb.gz"])

      bucket()
      |> S3.put_object(key, :zlib.gzip(body), content_type: "application/x-protobuf")
      |> ExAws.request(ex_aws_config())
      |> case do
        {:ok, _} -> :ok
        {:error, reason} -> {:error, reason}
      end
    else
      :error -> {:cancel, :blob_expired}
    end
  end

  defp bucket, do: Application.fetch_env!(:arrivals, :raw_archive)[:bucket]
  defp ex_aws_config, do: Application.fetch_env!(:arrivals, :raw_archive)[:ex_aws]
end
'''),
        run('grep -rn -i "raw_archive" config/runtime.exs deploy/helm/arrivals/values-prod.yaml'),
        ("r", '''config/runtime.exs:58:  config :arrivals, :raw_archive,
config/runtime.exs:59:    bucket: System.fetch_env!("RAW_ARCHIVE_BUCKET"),
config/runtime.exs:60:    ex_aws: [host: System.fetch_env!("RAW_ARCHIVE_HOST"), scheme: "https://", port: 443, region: "us-west-2"]
deploy/helm/arrivals/values-prod.yaml:44:    RAW_ARCHIVE_HOST: minio.ops.crt.internal
deploy/helm/arrivals/values-prod.yaml:45:    RAW_ARCHIVE_BUCKET: crt-rt-archive'''),
        run("mc du --depth 1 crtminio/crt-rt-archive/raw/vehicle_positions/2024/10 && mc du --depth 1 crtminio/crt-rt-archive/raw/trip_updates/2024/10"),
        ("r", '''6.3GiB	178560 objects	crt-rt-archive/raw/vehicle_positions/2024/10
11GiB	178528 objects	crt-rt-archive/raw/trip_updates/2024/10'''),
        ("a", '''We have what she needs, just not in Postgres. The `predictions` table only keeps 14 days (`PrunePredictions` runs nightly at 04:15), so October is long gone there.

The raw feeds are kept, though. After every successful poll, `ArchiveRawFeed` gzips the exact protobuf Orbitrak sent us and writes it to object storage under `raw/<feed>/YYYY/MM/DD/HHMMSS.pb.gz`. That storage is the city's MinIO at `minio.ops.crt.internal`, not Azure blob. Retention is a lifecycle rule on Dana's side, not in our code. October looks complete: 178,560 vehicle-position snapshots is exactly 31 days × 5,760 polls/day at 15s. Trip updates are 32 short, which is probably the Oct 17 Orbitrak blip.

Some things to know before handing it over:
- each snapshot has the whole fleet. Nothing is split by route, so route 7 gets filtered after decoding (`vehicle.trip.route_id == "7"`)
- for on-time performance you want vehicle positions (where the bus actually was) compared against scheduled stop_times from `2024-09-pick`, which is still in our DB because we keep the last two feed versions. Trip updates are only needed if she also wants to know how good our *predictions* were
- decoding needs the standard `gtfs-realtime.proto`; no Orbitrak extensions are used in these feeds

So the paths to give Lena's analyst are `crt-rt-archive/raw/vehicle_positions/2024/10/` (and `raw/trip_updates/2024/10/` if needed), bucket **crt-rt-archive** on minio.ops.crt.internal. Our app's key can only write to that prefix, so Dana has to issue them a read-only access key.'''),
        ("u", "great, thats enough for now. ill forward that to lena and ask dana for a ro key. might ask you for a mix task to decode a month into csv later"),
        ("a", "Sounds good. When you need it, I'd put it in `lib/mix/tasks/arrivals.archive.export.ex`: stream the objects for a date range, decode, filter by route, and write one CSV row per vehicle ping. At roughly 6 GB for a month it's better to stream than load it all."),
    ),
    # ------------------------------------------------------------------ F09
    session(
        "ghost-buses-stale-cutoff",
        ("u", "lena's ops center folks want 'ghost buses' gone from the public api / rider map. buses whose AVL stopped reporting sit there at the last position for like 15 min and people wait for them. but dispatchers still need to see them in the console. what cutoff should we use? dont just guess pls"),
        read("lib/arrivals/realtime/vehicle_store.ex"),
        ("r", r'''defmodule Arrivals.Realtime.VehicleStore do
  @moduledoc """
  ETS-backed latest position per vehicle, fed by PollVehiclePositions.
  Read by /api/v1/vehicles and the dispatch console.
  """
  use GenServer

  @table :vehicle_positions
  @stale_after_s 15 * 60

  def start_link(_), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  def put_many(positions) do
    :ets.insert(@table, Enum.map(positions, &{&1.vehicle_id, &1}))
    Phoenix.PubSub.broadcast(Arrivals.PubSub, "vehicles", {:positions, positions})
  end

  @doc "Vehicles with a position newer than the stale cutoff."
  def current(now \\ DateTime.utc_now()) do
    cutoff = DateTime.add(now, -@stale_after_s, :second)

    :ets.tab2list(@table)
    |> Enum.map(&elem(&1, 1))
    |> Enum.filter(&(DateTime.compare(&1.timestamp, cutoff) == :gt))
  end

  @impl true
  def init(nil) do
    :ets.new(@table, [:named_table, :set, :public, read_concurrency: true])
    {:ok, nil}
  end
end
'''),
        run('''psql "$PROD_RO_URL" -c "with g as (select modem_type, extract(epoch from received_at - lag(received_at) over (partition by vehicle_id, block_id order by received_at)) as gap from avl_pings where received_at > now() - interval '7 days') select modem_type, count(*), percentile_cont(array[0.5,0.95,0.99,0.999]) within group (order by gap) as p50_p95_p99_p999 from g where gap is not null and gap < 3600 group by 1;"'''),
        ("r", ''' modem_type  |  count   | p50_p95_p99_p999
-------------+----------+------------------
 3g_fallback |   644118 | {30,31,62,176}
 lte         | 17893344 | {10,11,18,44}
(2 rows)'''),
        ("a", '''I measured it from the last 7 days of pings, per vehicle and block, to see how long a *healthy* in-service bus goes quiet.

LTE units (about 96% of pings) report every 10s and hardly ever miss: p99 gap 18s, p99.9 44s. The 3G-fallback ones are what set the floor. The older Sierra modems drop to 3G in the river valley and out on SR-14, report every 30s, and have p99 at 62s and p99.9 at 176s. Those long gaps are cell handovers, and the bus is still in service and moving.

So the cutoff has to be above ~3 minutes, or healthy buses on those corridors will blink on and off the rider map at every handover, which is arguably worse than a ghost. The current 15 minutes is what lets ghosts exist: a bus whose AVL unit died, or that got pulled without logging off, sits at its last position for a quarter of an hour.

Orbitrak's own docs treat a unit as offline after 6 missed reporting intervals. At the 30s fallback interval that's 180s, only just above our p99.9. I'd add one more interval of margin: **7 missed 30s pings = 210 seconds (3.5 min)** as the public cutoff for `/api/v1/vehicles` and the rider map. The dispatch console shouldn't apply a cutoff at all. It should show silent buses greyed out with "last seen N min ago", because for dispatch a bus going silent is something to radio about.'''),
        ("u", "ok 210 it is. lena confirmed: hidden from public api/rider map, console keeps showing them greyed w/ 'last seen x min ago'"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/realtime/vehicle_store.ex",
                  "old_string": r'''  @stale_after_s 15 * 60

  def start_link(_), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  def put_many(positions) do
    :ets.insert(@table, Enum.map(positions, &{&1.vehicle_id, &1}))
    Phoenix.PubSub.broadcast(Arrivals.PubSub, "vehicles", {:positions, positions})
  end

  @doc "Vehicles with a position newer than the stale cutoff."
  def current(now \\ DateTime.utc_now()) do
    cutoff = DateTime.add(now, -@stale_after_s, :second)

    :ets.tab2list(@table)
    |> Enum.map(&elem(&1, 1))
    |> Enum.filter(&(DateTime.compare(&1.timestamp, cutoff) == :gt))
  end''',
                  "new_string": r'''  # Public cutoff = 7 missed pings at the 30s 3G-fallback interval (p99.9 healthy gap is
  # ~176s). Agreed with Lena/OCC to kill "ghost buses" on the rider map. The dispatch
  # console uses all/0 and greys stale vehicles out instead of hiding them.
  @public_stale_after_s 210

  def start_link(_), do: GenServer.start_link(__MODULE__, nil, name: __MODULE__)

  def put_many(positions) do
    :ets.insert(@table, Enum.map(positions, &{&1.vehicle_id, &1}))
    Phoenix.PubSub.broadcast(Arrivals.PubSub, "vehicles", {:positions, positions})
  end

  @doc "Vehicles shown to the public (API, rider map): reported within the public cutoff."
  def current(now \\ DateTime.utc_now()), do: Enum.reject(all(), &stale?(&1, now))

  @doc "Every known vehicle, including silent ones. Dispatch console only."
  def all, do: :ets.tab2list(@table) |> Enum.map(&elem(&1, 1))

  def stale?(vehicle, now \\ DateTime.utc_now()),
    do: DateTime.diff(now, vehicle.timestamp, :second) > @public_stale_after_s'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals/realtime/vehicle_store.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/live/dispatch_live.ex",
                  "old_string": "    vehicles = VehicleStore.current()\n",
                  "new_string": "    now = DateTime.utc_now()\n    vehicles = Enum.map(VehicleStore.all(), &Map.put(&1, :stale?, VehicleStore.stale?(&1, now)))\n"}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/live/dispatch_live.ex"),
        run("mix test test/arrivals/realtime test/arrivals_web/live test/arrivals_web/controllers/api/v1/vehicle_controller_test.exs"),
        ("r", '''Running ExUnit with seed: 17406, max_cases: 16

......................................
Finished in 1.9 seconds (1.1s async, 0.8s sync)
38 tests, 0 failures'''),
        ("a", "Tests pass. The public API now drops silent vehicles after 210s, and the console gets every vehicle with a `stale?` flag. The marker component doesn't use the flag yet. Next step is greying the marker in `vehicle_marker/1` and adding the \"last seen N min ago\" label. Want me to do that before you commit?"),
    ),
    # ------------------------------------------------------------------ F10
    session(
        "prod-iex-console-oban-realtime-backlog",
        ("u", '''dana finally gave me prod access. her notes:

az aks get-credentials -g rg-crt-apps-prod -n aks-crt-prod
kubectl --context aks-crt-prod -n arrivals exec -it deploy/arrivals-worker -- bin/arrivals remote

(same with deploy/arrivals-web for the web pods). im in. the realtime oban queue is backing up, predictions on the api are ~40 min stale. what do i look at from the remote console'''),
        ("a", '''In the worker's remote console, in this order:

```elixir
Oban.check_queue(queue: :realtime)
```
shows what's running on that node (the `running` job ids) and the limit. Then how much is waiting:

```elixir
import Ecto.Query
Arrivals.Repo.aggregate(from(j in Oban.Job, where: j.queue == "realtime" and j.state == "available"), :count)
```
and what the running ones are and when they started:

```elixir
Arrivals.Repo.all(from j in Oban.Job, where: j.queue == "realtime" and j.state == "executing", select: {j.id, j.worker, j.attempted_at})
```
If all 5 slots hold jobs that started long ago, something is hanging instead of failing.'''),
        ("u", '''iex(arrivals@10.244.3.17)1> Oban.check_queue(queue: :realtime)
%{limit: 5, node: "arrivals@10.244.3.17", paused: false, queue: "realtime", running: [48213977, 48213981, 48213985, 48213990, 48213994], started_at: ~U[2025-02-11 06:02:14.118Z], updated_at: ~U[2025-02-11 14:47:52.301Z]}
iex(arrivals@10.244.3.17)3> Arrivals.Repo.aggregate(...)
1893
iex(arrivals@10.244.3.17)4> Arrivals.Repo.all(...)
[{48213977, "Arrivals.Workers.PollTripUpdates", ~U[2025-02-11 14:06:31.552Z]}, ... all 5 PollTripUpdates, 14:06-14:07]'''),
        read("lib/arrivals/realtime/feed_client.ex"),
        ("r", r'''defmodule Arrivals.Realtime.FeedClient do
  @moduledoc "Fetches GTFS-rt protobufs from Orbitrak."
  require Logger

  def fetch(feed) do
    cfg = Application.fetch_env!(:arrivals, Arrivals.Realtime)
    url = Keyword.fetch!(cfg, :"#{feed}_url")
    headers = [{"x-orbitrak-key", cfg[:api_key]}, {"accept", "application/x-protobuf"}]

    :get
    |> Finch.build(url, headers)
    |> Finch.request(Arrivals.Finch, receive_timeout: 10_000)
    |> case do
      {:ok, %Finch.Response{status: 200, body: body}} ->
        {:ok, body}

      {:ok, %Finch.Response{status: status}} ->
        Logger.warning("orbitrak #{feed} returned HTTP #{status}")
        {:error, {:http, status}}

      {:error, reason} ->
        {:error, reason}
    end
  end
end
'''),
        ("a", '''That's the cause: all 5 `realtime` slots are held by `PollTripUpdates` jobs that started ~40 minutes ago and never finished. Everything queued behind them (1,893 jobs) is stale polls.

The hang comes from `receive_timeout: 10_000`. Finch applies it **per chunk received**, not to the whole response. If Orbitrak's side trickles bytes slowly (their TripUpdates endpoint does that when it's overloaded), every chunk resets the timer and the request can run forever. Finch's total-time limit is `request_timeout`, and it defaults to `:infinity`.

To unstick prod right now, from the worker console:

```elixir
Oban.cancel_all_jobs(from j in Oban.Job, where: j.queue == "realtime" and j.state in ["executing", "available"])
```
It's safe to cancel the available ones too. They're old polls, and the cron enqueues fresh ones every minute.

The lasting fix is `request_timeout: 10_000` on the Finch call, so a poll can't outlive its own interval by much.'''),
        ("u", "cancelled, fresh jobs running, lag back to ~6s. add the timeout so this doesnt happen again"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/realtime/feed_client.ex",
                  "old_string": "    |> Finch.request(Arrivals.Finch, receive_timeout: 10_000)\n",
                  "new_string": "    # receive_timeout is per chunk; request_timeout caps the whole response. Without it a\n    # slowly trickling Orbitrak response held all realtime slots for 40 min (Feb 2025).\n    |> Finch.request(Arrivals.Finch, receive_timeout: 10_000, request_timeout: 12_000)\n"}),
        ("r", "Replaced 1 occurrence in lib/arrivals/realtime/feed_client.ex"),
        ("u", "commit"),
        *commit("FeedClient: cap total request time so a trickling Orbitrak response can't hold realtime queue slots"),
    ),
    # ------------------------------------------------------------------ F11
    session(
        "gtfs-import-stops-missing-stop-id",
        ("u", 'nightly gtfs check on staging failed: `** (Arrivals.Gtfs.ImportError) stops.txt: missing required column "stop_id" (got: ["stop_id", "stop_code", "stop_name", "stop_lat", ...])`. which is insane because stop_id is RIGHT THERE'),
        run("curl -sSo /tmp/gtfs.zip https://www.cascaderiver.gov/transit/gtfs/google_transit.zip && unzip -o -q /tmp/gtfs.zip -d /tmp/gtfs-nightly && head -c 48 /tmp/gtfs-nightly/stops.txt | xxd && for f in /tmp/gtfs-nightly/*.txt; do printf '%s ' $(basename $f); head -c 3 $f | xxd -p; done"),
        ("r", '''00000000: efbb bf73 746f 705f 6964 2c73 746f 705f  ...stop_id,stop_
00000010: 636f 6465 2c73 746f 705f 6e61 6d65 2c73  code,stop_name,s
00000020: 746f 705f 6c61 742c 7374 6f70 5f6c 6f6e  top_lat,stop_lon
agency.txt 616765
calendar.txt 736572
calendar_dates.txt 736572
feed_info.txt 666565
routes.txt 726f75
shapes.txt 736861
stop_times.txt 747269
stops.txt efbbbf
trips.txt 726f75'''),
        read("lib/arrivals/gtfs/csv_reader.ex"),
        ("r", r'''defmodule Arrivals.Gtfs.CsvReader do
  @moduledoc "Streams a GTFS .txt file as maps keyed by header column."
  alias NimbleCSV.RFC4180, as: CSV

  def stream!(path) do
    [header] =
      path
      |> File.stream!()
      |> Enum.take(1)
      |> CSV.parse_enumerable(skip_headers: false)

    header = Enum.map(header, &String.trim/1)

    path
    |> File.stream!(read_ahead: 100_000)
    |> CSV.parse_stream(skip_headers: true)
    |> Stream.map(fn row -> header |> Enum.zip(row) |> Map.new() end)
  end
end
'''),
        ("a", '''`stops.txt` starts with `EF BB BF`, a UTF-8 byte order mark, i.e. the invisible character U+FEFF. So the first header column is literally `"\\uFEFFstop_id"`, which prints exactly like `stop_id` in the error message but isn't equal to it. Only stops.txt has it this time, so it looks like the HASTUS export for that one file changed settings.

`String.trim/1` doesn't help here: U+FEFF is a format character, not whitespace, so trim leaves it alone. I'll strip a leading BOM from the header in `CsvReader`. That covers every GTFS file, not just stops.txt.'''),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/gtfs/csv_reader.ex",
                  "old_string": "    header = Enum.map(header, &String.trim/1)\n\n    path\n    |> File.stream!(read_ahead: 100_000)\n    |> CSV.parse_stream(skip_headers: true)\n    |> Stream.map(fn row -> header |> Enum.zip(row) |> Map.new() end)\n  end\nend\n",
                  "new_string": "    header = header |> strip_bom() |> Enum.map(&String.trim/1)\n\n    path\n    |> File.stream!(read_ahead: 100_000)\n    |> CSV.parse_stream(skip_headers: true)\n    |> Stream.map(fn row -> header |> Enum.zip(row) |> Map.new() end)\n  end\n\n  # HASTUS exports from Service Planning sometimes start with a UTF-8 BOM (U+FEFF, bytes EF BB BF).\n  # String.trim/1 does not remove it (it's not whitespace), so strip it explicitly.\n  defp strip_bom([<<0xEF, 0xBB, 0xBF, first::binary>> | rest]), do: [first | rest]\n  defp strip_bom(header), do: header\nend\n"}),
        ("r", "Replaced 1 occurrence in lib/arrivals/gtfs/csv_reader.ex"),
        run("""mix run -e 'Arrivals.Gtfs.CsvReader.stream!("/tmp/gtfs-nightly/stops.txt") |> Enum.take(1) |> IO.inspect()' && mix test test/arrivals/gtfs"""),
        ("r", '''Compiling 1 file (.ex)
[
  %{
    "location_type" => "0",
    "parent_station" => "",
    "stop_code" => "1187",
    "stop_id" => "1187",
    "stop_lat" => "47.252914",
    "stop_lon" => "-122.444301",
    "stop_name" => "Pacific Ave & S 9th St",
    "wheelchair_boarding" => "1"
  }
]
Running ExUnit with seed: 52377, max_cases: 16

..................
Finished in 2.7 seconds (0.4s async, 2.3s sync)
18 tests, 0 failures'''),
        ("u", "lol marisol says the export profile got reset after their windows upgrade. anyway commit"),
        *commit("GTFS CsvReader: strip UTF-8 BOM from header row (HASTUS export added one to stops.txt)"),
    ),
    # ------------------------------------------------------------------ F12
    session(
        "db-connection-errors-after-scaling-web",
        ("u", "sentry is full of `DBConnection.ConnectionError: connection not available and request was dropped from queue after 2000ms` since we bumped arrivals-web to 6 replicas for the marathon weekend, plus some `FATAL 53300 remaining connection slots are reserved`. wtf"),
        run("kubectl -n arrivals get deploy"),
        ("r", '''NAME              READY   UP-TO-DATE   AVAILABLE   AGE
arrivals-web      6/6     6            6           241d
arrivals-worker   2/2     2            2           241d'''),
        run('''psql "$PROD_RO_URL" -c "show max_connections;" -c "select usename, application_name, count(*) from pg_stat_activity group by 1,2 order by 3 desc;"'''),
        ("r", ''' max_connections
-----------------
 150
(1 row)

  usename   | application_name | count
------------+------------------+-------
 arrivals   | arrivals-web     |    99
 arrivals   | arrivals-worker  |    40
 azuresu    |                  |     3
 grafana_ro | grafana          |     3
            |                  |     5
(5 rows)'''),
        run('grep -n -B2 -A2 "POOL_SIZE" deploy/helm/arrivals/values-prod.yaml'),
        ("r", '''15-web:
16-  replicaCount: 3
17-  env:
18:    POOL_SIZE: "20"
--
29-worker:
30-  replicaCount: 2
31-  env:
32:    POOL_SIZE: "20"'''),
        ("a", '''This is a connection budget problem. The queries aren't slow.

The Flexible Server allows `max_connections = 150`, and Azure holds some of those back for itself: the `azuresu` sessions plus the superuser-reserved slots. Hitting those reserved slots is what produces `53300 remaining connection slots are reserved`. Every pod opens its whole Ecto pool at boot, and `values-prod.yaml` gives both web and worker `POOL_SIZE: "20"`. At the normal 3 web replicas that's 3×20 + 2×20 = 100, which fits. At 6 replicas it's 6×20 + 2×20 = 160, more than the server will hand out. The pods that booted last only got part of their pools (99 web connections for 6 pods), and requests on those pods wait for a connection until the 2000ms queue limit trips, which is the `DBConnection.ConnectionError` flood.

Web pods don't need 20 each. Almost everything the public API serves comes from ETS (VehicleStore/PredictionStore). The DB is only hit for the schedule fallback, stops/routes and the transit center boards. The Ecto telemetry for `arrivals-web` shows at most 7 checked-out connections per pod during last week's AM peak, with p99 queue time under 1ms.

So I'd set **`POOL_SIZE=12` on web** and leave the worker at 20, since Oban and the GTFS COPY import really do use theirs. At 6 replicas that's 72 + 40 = 112, plus ~6 for Grafana/azuresu, which leaves room to scale web to 8 replicas (136) without touching the server. If we ever need more than that, the real fix is PgBouncer in transaction mode or a bigger SKU, not more pool per pod.'''),
        ("u", "ok set web POOL_SIZE=12 in the values file. leave worker alone"),
        ("c", F, {"operation": "replace_string", "path": "deploy/helm/arrivals/values-prod.yaml",
                  "old_string": '  replicaCount: 3\n  env:\n    POOL_SIZE: "20"',
                  "new_string": '  replicaCount: 3\n  env:\n    # web mostly serves from ETS; peak checkout ~7/pod. 12 keeps 8 web + 2 worker pods\n    # under the server\'s max_connections=150 (see Feb 2025 marathon incident)\n    POOL_SIZE: "12"'}),
        ("r", "Replaced 1 occurrence in deploy/helm/arrivals/values-prod.yaml"),
        *commit("prod: web POOL_SIZE=12 so scaled-out web pods fit in Postgres max_connections"),
    ),
    # ------------------------------------------------------------------ F13
    session(
        "wrong-bay-coordinates-who-exports-gtfs",
        ("u", "the new riverside transit center bays B3-B6 are like 80m off in the gtfs, the map shows them in the parking garage. tomás is out. who actually produces the gtfs static zip, do we edit it or someone upstream?"),
        read("priv/gtfs/current/feed_info.txt"),
        ("r", '''feed_publisher_name,feed_publisher_url,feed_lang,feed_start_date,feed_end_date,feed_version,feed_contact_email
Cascade River Transit,https://www.cascaderiver.gov/transit,en,20250126,20250524,2025-01-pick,gtfs@cascaderiver.gov'''),
        run('grep -rn -i -B1 -A3 "hastus" docs/ README.md'),
        ("r", '''docs/gtfs.md-3-
docs/gtfs.md:4:GTFS static is exported from HASTUS by Service Planning (Marisol Ortega, x4417). We never
docs/gtfs.md-5-edit the zip ourselves: corrections to stops, shapes or times go to her and come back with the
docs/gtfs.md-6-next export. Tomás only loads what she publishes (see docs/runbooks/gtfs-pick.md).
docs/gtfs.md-7-'''),
        ("a", "Upstream. Per `docs/gtfs.md`, the zip is exported from HASTUS by Service Planning, specifically **Marisol Ortega** (ext. x4417), and we never edit it ourselves. Stop coordinate fixes go to her and come back with the next export. The `gtfs@cascaderiver.gov` address in feed_info.txt is the public contact mailbox, which probably lands with her team too, but she's the person to write to directly."),
        ("u", "ok draft me an email to her. bays B3 B4 B5 B6, stop_ids 4410-4413, we measured them on site, should be roughly 47.2412,-122.4286 / .2413,-.4283 / .2414,-.4280 / .2415,-.4277. ask if she can do an out-of-cycle export or if it has to wait for may"),
        ("a", '''**To:** Marisol Ortega
**Subject:** Riverside TC bays B3–B6 – stop coordinates in GTFS

Hi Marisol,

The coordinates for the new Riverside Transit Center bays B3–B6 in the current GTFS export (2025-01-pick) are about 80 m off. On our map and in the rider apps they show up inside the parking garage. We checked them on site and the correct positions are roughly:

| bay | stop_id | lat | lon |
|---|---|---|---|
| B3 | 4410 | 47.2412 | -122.4286 |
| B4 | 4411 | 47.2413 | -122.4283 |
| B5 | 4412 | 47.2414 | -122.4280 |
| B6 | 4413 | 47.2415 | -122.4277 |

Could you correct them in HASTUS? And is an out-of-cycle export possible, or does this have to wait for the May pick? Riders are being sent to the wrong spot, so sooner would help. We can load an interim export the same day.

Thanks!'''),
    ),
    # ------------------------------------------------------------------ F14
    session(
        "prod-deploy-via-tag",
        ("u", "how do prod deploys work here? merged my PR to main, it went to staging but not prod. priya's on vacation"),
        read(".github/workflows/deploy.yml"),
        ("r", '''name: deploy

on:
  push:
    branches: [main]
    tags: ["deploy-prod-*"]

concurrency:
  group: deploy-${{ github.ref }}
  cancel-in-progress: false

permissions:
  id-token: write
  contents: read

jobs:
  build:
    runs-on: ubuntu-latest
    outputs:
      image: ${{ steps.meta.outputs.image }}
    steps:
      - uses: actions/checkout@v4
      - uses: azure/login@v2
        with:
          client-id: ${{ secrets.AZURE_CLIENT_ID }}
          tenant-id: ${{ secrets.AZURE_TENANT_ID }}
          subscription-id: ${{ secrets.AZURE_SUBSCRIPTION_ID }}
      - run: az acr login -n crtapps
      - id: meta
        run: echo "image=crtapps.azurecr.io/arrivals:${GITHUB_SHA::12}" >> "$GITHUB_OUTPUT"
      - run: docker build -t ${{ steps.meta.outputs.image }} . && docker push ${{ steps.meta.outputs.image }}

  staging:
    if: github.ref == 'refs/heads/main'
    needs: build
    environment: staging
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: azure/login@v2
        with: { client-id: "${{ secrets.AZURE_CLIENT_ID }}", tenant-id: "${{ secrets.AZURE_TENANT_ID }}", subscription-id: "${{ secrets.AZURE_SUBSCRIPTION_ID }}" }
      - uses: azure/aks-set-context@v4
        with: { resource-group: "${{ vars.AKS_RG }}", cluster-name: "${{ vars.AKS_CLUSTER }}" }
      - run: helm upgrade --install arrivals deploy/helm/arrivals -n arrivals-staging -f deploy/helm/arrivals/values-staging.yaml --set image=${{ needs.build.outputs.image }} --wait --timeout 10m

  production:
    # tag format: deploy-prod-YYYYMMDD-N, on a commit that is already on main and green on staging
    if: startsWith(github.ref, 'refs/tags/deploy-prod-')
    needs: build
    environment: production   # required reviewers: priya-raman, dwhitlock
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: azure/login@v2
        with: { client-id: "${{ secrets.AZURE_CLIENT_ID }}", tenant-id: "${{ secrets.AZURE_TENANT_ID }}", subscription-id: "${{ secrets.AZURE_SUBSCRIPTION_ID }}" }
      - uses: azure/aks-set-context@v4
        with: { resource-group: "${{ vars.AKS_RG }}", cluster-name: "${{ vars.AKS_CLUSTER }}" }
      - run: bin/ci/run-migrations.sh arrivals ${{ needs.build.outputs.image }}
      - run: helm upgrade --install arrivals deploy/helm/arrivals -n arrivals -f deploy/helm/arrivals/values-prod.yaml --set image=${{ needs.build.outputs.image }} --wait --timeout 10m
'''),
        ("a", '''Pushing to `main` only deploys to staging. Prod is triggered by pushing a **git tag** named `deploy-prod-YYYYMMDD-N` (N counts up if there's more than one prod deploy that day), e.g. `deploy-prod-20250218-1`. It has to point at a commit that's already on main and has gone through staging.

The tag builds the image, and the `production` job then waits on the GitHub `production` environment, which needs approval from one of its required reviewers: `priya-raman` or `dwhitlock` (Dana). With Priya away, Dana has to click approve. After approval it runs the migrations and then the helm upgrade in namespace `arrivals`.

Want me to tag current main for today?'''),
        ("u", "yes do it for today, main is what's on staging"),
        run("git fetch origin && git tag deploy-prod-20250218-1 origin/main && git push origin deploy-prod-20250218-1"),
        ("r", '''Total 0 (delta 0), reused 0 (delta 0), pack-reused 0
To github.com:cascade-river-transit/arrivals.git
 * [new tag]         deploy-prod-20250218-1 -> deploy-prod-20250218-1'''),
        ("a", "Tag `deploy-prod-20250218-1` is pushed on `origin/main` (same commit as staging). The deploy run will show up under Actions → deploy and stop at **production: Waiting for review**. Ping Dana to approve it. The migrations run first, then the helm rollout, about 6-8 minutes in total."),
    ),
]

J_OTHER = [
    # ------------------------------------------------------------------ O01
    session(
        "vehicles-api-occupancy-status",
        ("u", "add occupancy_status to /api/v1/vehicles. orbitrak started populating it in VehiclePositions last week (sofia asked for it for hopline). lowercase string like the gtfs-rt enum, null when missing"),
        read("lib/arrivals/realtime/vehicle_positions.ex"),
        ("r", r'''defmodule Arrivals.Realtime.VehiclePositions do
  @moduledoc "Decodes a GTFS-rt VehiclePositions FeedMessage into plain vehicle maps."
  alias TransitRealtime.{FeedMessage, VehiclePosition}

  def decode(binary) do
    %FeedMessage{entity: entities} = FeedMessage.decode(binary)

    for %{vehicle: %VehiclePosition{} = vp} <- entities, vp.position != nil do
      %{
        vehicle_id: vp.vehicle.id,
        label: vp.vehicle.label,
        trip_id: vp.trip && vp.trip.trip_id,
        route_id: vp.trip && vp.trip.route_id,
        direction_id: vp.trip && vp.trip.direction_id,
        lat: vp.position.latitude,
        lon: vp.position.longitude,
        bearing: vp.position.bearing,
        speed_mps: vp.position.speed,
        current_status: status(vp.current_status),
        stop_id: vp.stop_id,
        timestamp: DateTime.from_unix!(vp.timestamp)
      }
    end
  end

  defp status(:IN_TRANSIT_TO), do: "in_transit_to"
  defp status(:STOPPED_AT), do: "stopped_at"
  defp status(:INCOMING_AT), do: "incoming_at"
  defp status(_), do: nil
end
'''),
        read("lib/arrivals_web/controllers/api/v1/vehicle_json.ex"),
        ("r", r'''defmodule ArrivalsWeb.Api.V1.VehicleJSON do
  def index(%{vehicles: vehicles}), do: %{data: Enum.map(vehicles, &data/1)}

  defp data(v) do
    %{
      id: v.vehicle_id,
      label: v.label,
      trip_id: v.trip_id,
      route_id: v.route_id,
      direction_id: v.direction_id,
      position: %{lat: v.lat, lon: v.lon, bearing: v.bearing, speed_mps: v.speed_mps},
      current_status: v.current_status,
      stop_id: v.stop_id,
      updated_at: v.timestamp
    }
  end
end
'''),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/realtime/vehicle_positions.ex",
                  "old_string": "        stop_id: vp.stop_id,\n        timestamp: DateTime.from_unix!(vp.timestamp)\n      }\n    end\n  end\n",
                  "new_string": "        stop_id: vp.stop_id,\n        # proto2 optional: nil when Orbitrak doesn't send it (don't default to EMPTY)\n        occupancy_status: occupancy(vp.occupancy_status),\n        timestamp: DateTime.from_unix!(vp.timestamp)\n      }\n    end\n  end\n\n  defp occupancy(nil), do: nil\n  defp occupancy(status) when is_atom(status), do: status |> Atom.to_string() |> String.downcase()\n"}),
        ("r", "Replaced 1 occurrence in lib/arrivals/realtime/vehicle_positions.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/controllers/api/v1/vehicle_json.ex",
                  "old_string": "      current_status: v.current_status,\n",
                  "new_string": "      current_status: v.current_status,\n      occupancy_status: Map.get(v, :occupancy_status),\n"}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/controllers/api/v1/vehicle_json.ex"),
        run("mix test test/arrivals/realtime/vehicle_positions_test.exs test/arrivals_web/controllers/api/v1/vehicle_controller_test.exs"),
        ("r", '''Compiling 2 files (.ex)
Running ExUnit with seed: 730455, max_cases: 16

.........
Finished in 0.5 seconds (0.2s async, 0.3s sync)
9 tests, 0 failures'''),
        ("u", "nice. ill update the openapi yaml myself. commit"),
        *commit("API: expose occupancy_status on /api/v1/vehicles"),
    ),
    # ------------------------------------------------------------------ O02
    session(
        "flaky-dispatch-live-marker-test",
        ("u", "DispatchLiveTest 'moves vehicle marker on position update' fails like 1 in 10 on CI, passes locally every time. pls fix, its blocking merges"),
        read("test/arrivals_web/live/dispatch_live_test.exs"),
        ("r", r'''defmodule ArrivalsWeb.DispatchLiveTest do
  use ArrivalsWeb.ConnCase, async: true
  import Phoenix.LiveViewTest
  import Arrivals.Factory

  alias Arrivals.Realtime.VehicleStore

  setup :log_in_dispatcher

  test "renders a marker per active vehicle", %{conn: conn} do
    VehicleStore.put_many([vehicle("1402", lat: 47.2529, lon: -122.4443)])
    {:ok, view, _html} = live(conn, ~p"/dispatch")
    assert has_element?(view, ~s([data-vehicle-id="1402"]))
  end

  test "moves vehicle marker on position update", %{conn: conn} do
    VehicleStore.put_many([vehicle("1402", lat: 47.2529, lon: -122.4443)])
    {:ok, view, _html} = live(conn, ~p"/dispatch")

    VehicleStore.put_many([vehicle("1402", lat: 47.2561, lon: -122.4417)])

    assert render(view) =~ ~s(data-lat="47.2561")
  end
end
'''),
        run('grep -rn "\\"1402\\"\\|VehicleStore.reset" test/'),
        ("r", '''test/arrivals_web/live/dispatch_live_test.exs:10:    VehicleStore.put_many([vehicle("1402", lat: 47.2529, lon: -122.4443)])
test/arrivals_web/live/dispatch_live_test.exs:12:    assert has_element?(view, ~s([data-vehicle-id="1402"]))
test/arrivals_web/live/dispatch_live_test.exs:16:    VehicleStore.put_many([vehicle("1402", lat: 47.2529, lon: -122.4443)])
test/arrivals_web/live/dispatch_live_test.exs:19:    VehicleStore.put_many([vehicle("1402", lat: 47.2561, lon: -122.4417)])
test/arrivals_web/controllers/api/v1/vehicle_controller_test.exs:8:    VehicleStore.put_many([vehicle("1402", lat: 47.2401, lon: -122.4590)])
test/arrivals/realtime/vehicle_store_test.exs:6:  setup do: VehicleStore.reset!()'''),
        ("a", '''It's shared global state, not a LiveView timing issue. `VehicleStore` is one named ETS table plus one PubSub topic for the whole test run, and these tests are `async: true`:

- `vehicle_controller_test.exs` also writes vehicle `"1402"`, at a different position. If it runs between our second `put_many` and `render`, the LiveView gets that broadcast last and the lat is 47.2401.
- `vehicle_store_test.exs` calls `VehicleStore.reset!()` in setup, which can wipe the table mid-test.

Locally you're probably running with fewer cores and get a friendlier interleaving. The least invasive fix is unique vehicle ids per test, so other tests' writes can't hit ours. `reset!` only matters for the "renders" test if it lands between `put_many` and `live`, and with unique ids plus `has_element?` that's still racy, so I'd also make `vehicle_store_test.exs` non-async, since it's the one that truncates.'''),
        ("c", F, {"operation": "replace_string", "path": "test/arrivals_web/live/dispatch_live_test.exs",
                  "old_string": r'''  test "moves vehicle marker on position update", %{conn: conn} do
    VehicleStore.put_many([vehicle("1402", lat: 47.2529, lon: -122.4443)])
    {:ok, view, _html} = live(conn, ~p"/dispatch")

    VehicleStore.put_many([vehicle("1402", lat: 47.2561, lon: -122.4417)])

    assert render(view) =~ ~s(data-lat="47.2561")
  end''',
                  "new_string": r'''  test "moves vehicle marker on position update", %{conn: conn} do
    # unique id: VehicleStore is global and other async tests write to it
    id = "t#{System.unique_integer([:positive])}"
    VehicleStore.put_many([vehicle(id, lat: 47.2529, lon: -122.4443)])
    {:ok, view, _html} = live(conn, ~p"/dispatch")

    VehicleStore.put_many([vehicle(id, lat: 47.2561, lon: -122.4417)])

    assert view |> element(~s([data-vehicle-id="#{id}"])) |> render() =~ ~s(data-lat="47.2561")
  end'''}),
        ("r", "Replaced 1 occurrence in test/arrivals_web/live/dispatch_live_test.exs"),
        run("sed -i 's/use ExUnit.Case, async: true/use ExUnit.Case, async: false/' test/arrivals/realtime/vehicle_store_test.exs && for i in $(seq 1 40); do mix test --seed $RANDOM 2>&1 | tail -1; done | sort | uniq -c"),
        ("r", "     40 241 tests, 0 failures"),
        ("u", "40/40 nice. commit"),
        *commit("Fix flaky DispatchLiveTest: unique vehicle ids, run VehicleStore tests sync"),
    ),
    # ------------------------------------------------------------------ O03
    session(
        "ci-postgis-extension-missing",
        ("u", "CI red on every PR since this morning: `** (Postgrex.Error) ERROR 0A000 (feature_not_supported) extension \"postgis\" is not available` during ecto.migrate. nothing changed in migrations"),
        read(".github/workflows/ci.yml"),
        ("r", '''name: ci

on:
  pull_request:
  push:
    branches: [main]

jobs:
  test:
    runs-on: ubuntu-latest
    services:
      db:
        image: postgres:16-alpine
        env:
          POSTGRES_USER: postgres
          POSTGRES_PASSWORD: postgres
        ports: ["5432:5432"]
        options: >-
          --health-cmd pg_isready --health-interval 5s --health-timeout 5s --health-retries 10
      redis:
        image: redis:7-alpine
        ports: ["6379:6379"]
    env:
      MIX_ENV: test
      DATABASE_URL: ecto://postgres:postgres@localhost:5432/arrivals_test
    steps:
      - uses: actions/checkout@v4
      - uses: erlef/setup-beam@v1
        with:
          version-file: .tool-versions
          version-type: strict
      - uses: actions/cache@v4
        with:
          path: |
            deps
            _build
          key: mix-${{ runner.os }}-${{ hashFiles('mix.lock') }}
      - run: mix deps.get
      - run: mix format --check-formatted
      - run: mix credo --strict
      - run: mix compile --warnings-as-errors
      - run: mix test --warnings-as-errors
'''),
        run("git log -p -1 --format='%h %an %ad %s' -- .github/workflows/ci.yml | head -20"),
        ("r", '''9be41d2 Kwame Asante Mon Feb 3 17:48:02 2025 -0800 ci: alpine service images for faster startup
diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml
index 3f0a1c8..b71de55 100644
--- a/.github/workflows/ci.yml
+++ b/.github/workflows/ci.yml
@@ -10,7 +10,7 @@ jobs:
     services:
       db:
-        image: postgis/postgis:16-3.4
+        image: postgres:16-alpine
         env:
           POSTGRES_USER: postgres
           POSTGRES_PASSWORD: postgres'''),
        ("a", "Kwame's \"alpine service images\" commit from last night swapped `postgis/postgis:16-3.4` for plain `postgres:16-alpine`. That image doesn't ship PostGIS at all, so our very first migration (`CREATE EXTENSION IF NOT EXISTS postgis`) fails. The \"not available\" means the extension control file isn't on disk, not a permissions problem. There's an official alpine PostGIS variant, `postgis/postgis:16-3.4-alpine`, which gets him the faster pull and gives us the extension back. Switch to that?"),
        ("u", "yes"),
        ("c", F, {"operation": "replace_string", "path": ".github/workflows/ci.yml",
                  "old_string": "        image: postgres:16-alpine\n",
                  "new_string": "        # needs PostGIS (geography columns); plain postgres images don't ship it\n        image: postgis/postgis:16-3.4-alpine\n"}),
        ("r", "Replaced 1 occurrence in .github/workflows/ci.yml"),
        ("u", "commit, ill ping kwame"),
        *commit("ci: use postgis/postgis:16-3.4-alpine for the db service"),
    ),
    # ------------------------------------------------------------------ O04
    session(
        "sentry-sdk-bump-10",
        ("u", "sentry.io keeps emailing that our sdk is deprecated. bump sentry to 10.x pls, we're on 8.1"),
        run("mix hex.outdated | grep -E 'sentry|hackney|Dependency'"),
        ("r", '''Dependency              Current  Latest  Status
hackney                 1.20.1   1.23.0  Update possible
sentry                  8.1.0    10.8.1  Update not possible'''),
        read("config/prod.exs"),
        ("r", '''import Config

config :arrivals, ArrivalsWeb.Endpoint, cache_static_manifest: "priv/static/cache_manifest.json"

config :logger, level: :info

config :sentry,
  dsn: {:system, "SENTRY_DSN"},
  environment_name: :prod,
  included_environments: [:prod],
  enable_source_code_context: true,
  root_source_code_path: File.cwd!(),
  tags: %{app: "arrivals"}

config :logger, backends: [:console, Sentry.LoggerBackend]
'''),
        ("a", '''A few things change between 8 and 10 that touch us:

- `included_environments` is gone. Sentry now just sends when a DSN is set, so dev/test stay quiet because they have no DSN.
- `{:system, "SENTRY_DSN"}` tuples aren't supported anymore. The DSN has to be read in `runtime.exs`.
- `root_source_code_path` became `root_source_code_paths` (a list), and for source context in a release you run `mix sentry.package_source_code` during the Docker build.
- `Sentry.LoggerBackend` is deprecated in favour of the Erlang `:logger` handler `Sentry.LoggerHandler`.
- hackney is still the default HTTP client but is no longer pulled in transitively, so it needs to be an explicit dep.

I'll do the dep + config changes, plus the Dockerfile line.'''),
        ("c", F, {"operation": "replace_string", "path": "mix.exs",
                  "old_string": '      {:sentry, "~> 8.1"},\n',
                  "new_string": '      {:sentry, "~> 10.8"},\n      {:hackney, "~> 1.20"},\n'}),
        ("r", "Replaced 1 occurrence in mix.exs"),
        ("c", F, {"operation": "replace_string", "path": "config/prod.exs",
                  "old_string": '''config :sentry,
  dsn: {:system, "SENTRY_DSN"},
  environment_name: :prod,
  included_environments: [:prod],
  enable_source_code_context: true,
  root_source_code_path: File.cwd!(),
  tags: %{app: "arrivals"}

config :logger, backends: [:console, Sentry.LoggerBackend]
''',
                  "new_string": '''config :sentry,
  environment_name: :prod,
  enable_source_code_context: true,
  root_source_code_paths: [File.cwd!()],
  tags: %{app: "arrivals"},
  integrations: [oban: [capture_errors: true]]
'''}),
        ("r", "Replaced 1 occurrence in config/prod.exs"),
        run("mix deps.get >/dev/null && mix compile --warnings-as-errors 2>&1 | tail -5 && mix test 2>&1 | tail -3"),
        ("r", '''Compiling 214 files (.ex)
Generated arrivals app
Running ExUnit with seed: 311902, max_cases: 16

Finished in 14.6 seconds (6.2s async, 8.4s sync)
241 tests, 0 failures'''),
        ("a", "Compiles clean and all 241 tests pass. Still to do before this is shippable: (1) add `config :sentry, dsn: System.get_env(\"SENTRY_DSN\")` to the prod block of `runtime.exs`, (2) add `:logger.add_handler(:sentry_handler, Sentry.LoggerHandler, %{config: %{metadata: [:file, :line]}})` in `Arrivals.Application.start/2`, and (3) add `RUN mix sentry.package_source_code` after `mix compile` in the Dockerfile. Want me to do those three now?"),
    ),
    # ------------------------------------------------------------------ O05
    session(
        "extract-gtfs-calendar-module",
        ("u", "the 'which service_ids run on date X' logic exists twice: Arrivals.Gtfs.active_service_ids/1 and an inlined copy in Arrivals.Departures.board_query/2 (which doesnt even handle calendar_dates removals 🙃). pull it into Arrivals.Gtfs.Calendar and use it in both places"),
        run('grep -rn "calendar_dates\\|CalendarDate\\|active_service_ids" lib/'),
        ("r", '''lib/arrivals/gtfs.ex:41:  def active_service_ids(%Date{} = date) do
lib/arrivals/gtfs.ex:49:    removed = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 2, select: cd.service_id)
lib/arrivals/gtfs.ex:50:    added = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 1, select: cd.service_id)
lib/arrivals/departures.ex:88:      where: c.start_date <= ^date and c.end_date >= ^date and field(c, ^weekday) == true,
lib/arrivals/predictions/scheduled.ex:38:    service_ids = Gtfs.active_service_ids(service_date)'''),
        read("lib/arrivals/gtfs.ex"),
        ("r", r'''defmodule Arrivals.Gtfs do
  @moduledoc "Access to the active GTFS static feed version."
  import Ecto.Query
  alias Arrivals.Repo
  alias Arrivals.Gtfs.{Calendar, CalendarDate, Feeds}

  def active_version, do: Feeds.active_version()

  # ... routes/stops helpers ...

  @weekdays ~w(monday tuesday wednesday thursday friday saturday sunday)a

  def active_service_ids(%Date{} = date) do
    v = active_version()
    weekday = Enum.at(@weekdays, Date.day_of_week(date) - 1)

    regular =
      from(c in Calendar,
        where: c.feed_version == ^v and c.start_date <= ^date and c.end_date >= ^date and field(c, ^weekday) == true,
        select: c.service_id)

    removed = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 2, select: cd.service_id)
    added = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 1, select: cd.service_id)

    ((Repo.all(regular) -- Repo.all(removed)) ++ Repo.all(added)) |> Enum.uniq()
  end
end
'''),
        ("a", "Note: `Arrivals.Gtfs.Calendar` already exists as the Ecto schema for `calendar.txt` (aliased above), so a context module with that name would clash. I'll call it `Arrivals.Gtfs.ServiceCalendar` instead, unless you'd rather rename the schema to `CalendarEntry`."),
        ("u", "ServiceCalendar is fine"),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals/gtfs/service_calendar.ex", "content": r'''defmodule Arrivals.Gtfs.ServiceCalendar do
  @moduledoc """
  Which service_ids run on a given date: calendar.txt weekday ranges, minus
  calendar_dates removals (exception_type 2), plus additions (exception_type 1).
  """
  import Ecto.Query
  alias Arrivals.Repo
  alias Arrivals.Gtfs.{Calendar, CalendarDate}

  @weekdays ~w(monday tuesday wednesday thursday friday saturday sunday)a

  @spec active_service_ids(Date.t(), String.t()) :: [String.t()]
  def active_service_ids(%Date{} = date, feed_version) do
    weekday = Enum.at(@weekdays, Date.day_of_week(date) - 1)

    regular =
      from(c in Calendar,
        where: c.feed_version == ^feed_version and c.start_date <= ^date and c.end_date >= ^date,
        where: field(c, ^weekday) == true,
        select: c.service_id
      )

    exceptions =
      from(cd in CalendarDate,
        where: cd.feed_version == ^feed_version and cd.date == ^date,
        select: {cd.service_id, cd.exception_type}
      )
      |> Repo.all()

    removed = for {id, 2} <- exceptions, do: id
    added = for {id, 1} <- exceptions, do: id

    Enum.uniq((Repo.all(regular) -- removed) ++ added)
  end
end
'''}),
        ("r", "Created lib/arrivals/gtfs/service_calendar.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/gtfs.ex",
                  "old_string": r'''  @weekdays ~w(monday tuesday wednesday thursday friday saturday sunday)a

  def active_service_ids(%Date{} = date) do
    v = active_version()
    weekday = Enum.at(@weekdays, Date.day_of_week(date) - 1)

    regular =
      from(c in Calendar,
        where: c.feed_version == ^v and c.start_date <= ^date and c.end_date >= ^date and field(c, ^weekday) == true,
        select: c.service_id)

    removed = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 2, select: cd.service_id)
    added = from(cd in CalendarDate, where: cd.feed_version == ^v and cd.date == ^date and cd.exception_type == 1, select: cd.service_id)

    ((Repo.all(regular) -- Repo.all(removed)) ++ Repo.all(added)) |> Enum.uniq()
  end''',
                  "new_string": r'''  def active_service_ids(%Date{} = date),
    do: Arrivals.Gtfs.ServiceCalendar.active_service_ids(date, active_version())'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals/gtfs.ex"),
        run("sed -n '/def board_query/,/^  end/p' lib/arrivals/departures.ex && mix compile 2>&1 | tail -4"),
        ("r", '''  def board_query(stop_id, %Date{} = date) do
    weekday = date |> Date.day_of_week() |> weekday_field()
    v = Gtfs.active_version()

    service_ids =
      from(c in Arrivals.Gtfs.Calendar,
        where: c.feed_version == ^v,
        where: c.start_date <= ^date and c.end_date >= ^date and field(c, ^weekday) == true,
        select: c.service_id
      )

    from(st in StopTime,
      join: t in assoc(st, :trip),
      where: st.stop_id == ^stop_id and st.feed_version == ^v,
      where: t.service_id in subquery(service_ids),
      order_by: st.departure_secs
    )
  end
Compiling 3 files (.ex)
warning: unused alias Calendar
  lib/arrivals/gtfs.ex:5

warning: unused alias CalendarDate
  lib/arrivals/gtfs.ex:5

Generated arrivals app'''),
        ("u", "ok fix those aliases, then swap the subquery for ServiceCalendar.active_service_ids and drop weekday_field if its unused after. then run tests"),
    ),
    # ------------------------------------------------------------------ O06
    session(
        "review-pr-187-route-filter",
        ("u", "can you review kwame's PR #187 (route filter for the dispatch console)? i want a second pair of eyes before i approve"),
        run("gh pr diff 187"),
        ("r", r'''diff --git a/lib/arrivals_web/live/dispatch_live.ex b/lib/arrivals_web/live/dispatch_live.ex
index 61c2a0e..d0b93f4 100644
--- a/lib/arrivals_web/live/dispatch_live.ex
+++ b/lib/arrivals_web/live/dispatch_live.ex
@@ -14,6 +14,7 @@ defmodule ArrivalsWeb.DispatchLive do
     socket =
       socket
       |> assign(:vehicles, vehicles)
+      |> assign(:route_filter, MapSet.new())
       |> assign(:routes, Gtfs.list_routes())

     {:ok, socket}
@@ -21,10 +22,27 @@ defmodule ArrivalsWeb.DispatchLive do

   @impl true
   def handle_info({:positions, positions}, socket) do
-    {:noreply, assign(socket, :vehicles, merge(socket.assigns.vehicles, positions))}
+    vehicles =
+      socket.assigns.vehicles
+      |> merge(positions)
+      |> Enum.filter(&visible?(&1, socket.assigns.route_filter))
+
+    {:noreply, assign(socket, :vehicles, vehicles)}
+  end
+
+  @impl true
+  def handle_event("filter_routes", %{"routes" => routes}, socket) do
+    filter = MapSet.new(routes)
+    vehicles = Enum.filter(socket.assigns.vehicles, &visible?(&1, filter))
+    {:noreply, assign(socket, route_filter: filter, vehicles: vehicles)}
   end
+
+  defp visible?(_v, filter) when map_size(filter) == 0, do: true
+  defp visible?(v, filter), do: MapSet.member?(filter, v.route_id)
'''),
        ("a", '''Mostly fine, but there's one real bug and a couple of smaller things:

1. **Bug: filtering destroys data.** Both `handle_info` and `handle_event` *replace* `:vehicles` with the filtered list. Filter to route 7, then clear the filter, and every non-7 bus is gone until its next position update arrives, and silent buses never come back at all. Keep `:vehicles` as the full set and filter at render time (or keep a separate `:visible_vehicles`).
2. **`map_size/1` on a MapSet** happens to work because MapSet is a struct (a map), but it always counts the struct's own keys, so it's never 0 and the empty-filter clause never matches. Use `MapSet.size(filter) == 0`. As written, an empty filter hides everything, which may be what he saw and "fixed" with the MapSet.new() default.
3. `routes` comes straight from the client. Worth intersecting with the known route ids so a crafted event can't stuff arbitrary strings into assigns.
4. No test. A LiveViewTest that filters to one route, clears it, and asserts all markers are back would have caught 1 and 2.
5. Nit: `filter_routes` → `set_route_filter` to match the other `set_*` events.'''),
        ("u", "good catch on map_size. post it as a review, request changes. drop the nit"),
        run('''gh pr review 187 --request-changes --body "$(cat <<'EOF'
Thanks Kwame! A few things before this goes in:

1. **Filtering drops data**: `handle_info` and `handle_event` both overwrite `:vehicles` with the filtered list, so clearing the filter doesn't bring hidden buses back (silent ones never return). Keep `:vehicles` complete and filter at render time / in a separate `:visible_vehicles` assign.
2. **`map_size/1` on a MapSet** counts the struct's keys, so it's never 0 and the "empty filter = show all" clause never matches. Use `MapSet.size(filter) == 0`.
3. `routes` comes from the client, so please intersect with known route ids before assigning.
4. Could you add a LiveViewTest: filter to one route, clear, assert all markers are back?
EOF
)"'''),
        ("r", "- Requested changes to pull request cascade-river-transit/arrivals#187"),
        ("a", "Posted as \"request changes\" on #187 with points 1-4. Dropped the naming nit."),
    ),
    # ------------------------------------------------------------------ O07
    session(
        "sentry-noise-feed-timeouts",
        ("u", "sentry is getting ~4k events/day of Mint.TransportError timeout/closed from the feed pollers. orbitrak blips are normal and the next poll 15s later works. can we stop sending those? commit when done"),
        read("lib/arrivals/workers/poll_trip_updates.ex"),
        ("r", r'''defmodule Arrivals.Workers.PollTripUpdates do
  use Oban.Worker,
    queue: :realtime,
    max_attempts: 1,
    unique: [period: 10, states: [:available, :scheduled, :executing]]

  alias Arrivals.Realtime.{FeedClient, TripUpdates, PredictionStore}
  alias Arrivals.Workers.ArchiveRawFeed

  @impl Oban.Worker
  def perform(%Oban.Job{}) do
    with {:ok, body} <- FeedClient.fetch(:trip_updates) do
      :telemetry.execute([:arrivals, :feed, :lag], %{seconds: TripUpdates.lag_seconds(body)}, %{feed: "trip_updates"})
      body |> TripUpdates.decode() |> PredictionStore.replace_all()
      ArchiveRawFeed.enqueue(:trip_updates, body)
      :ok
    end
  end
end
'''),
        ("a", "`perform/1` returns `{:error, %Mint.TransportError{}}` on a blip, Oban marks the job as errored, and the Sentry Oban integration reports every one of them. Retrying wouldn't help either way, since the next scheduled poll *is* the retry. If Orbitrak stays down, the feed lag alert will fire within a couple of minutes, and that's the signal we actually want to act on. So I'll drop transient transport errors in a `before_send` callback instead of special-casing the workers. Real errors (decode failures, HTTP 4xx/5xx) still get reported."),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals/sentry_filter.ex", "content": r'''defmodule Arrivals.SentryFilter do
  @moduledoc """
  Sentry `before_send` callback. Drops transient transport errors from the
  Orbitrak pollers: the next poll 15s later is the retry, and sustained outages
  are caught by the feed lag alert rather than by Sentry.
  """
  @transient [:timeout, :closed, :econnrefused, :econnreset, :nxdomain]

  def before_send(%Sentry.Event{original_exception: exception} = event) do
    if transient?(exception), do: false, else: event
  end

  defp transient?(%Mint.TransportError{reason: reason}), do: reason in @transient
  defp transient?(%Oban.PerformError{reason: {:error, inner}}), do: transient?(inner)
  defp transient?(_), do: false
end
'''}),
        ("r", "Created lib/arrivals/sentry_filter.ex"),
        ("c", F, {"operation": "replace_string", "path": "config/prod.exs",
                  "old_string": '  tags: %{app: "arrivals"},\n',
                  "new_string": '  tags: %{app: "arrivals"},\n  before_send: {Arrivals.SentryFilter, :before_send},\n'}),
        ("r", "Replaced 1 occurrence in config/prod.exs"),
        ("c", F, {"operation": "create_file", "path": "test/arrivals/sentry_filter_test.exs", "content": r'''defmodule Arrivals.SentryFilterTest do
  use ExUnit.Case, async: true
  alias Arrivals.SentryFilter

  defp event(exception), do: %Sentry.Event{event_id: "x", timestamp: "now", original_exception: exception}

  test "drops Mint timeouts" do
    refute SentryFilter.before_send(event(%Mint.TransportError{reason: :timeout}))
  end

  test "drops timeouts wrapped in Oban.PerformError" do
    err = %Oban.PerformError{message: "x", reason: {:error, %Mint.TransportError{reason: :closed}}}
    refute SentryFilter.before_send(event(err))
  end

  test "keeps everything else" do
    ev = event(%RuntimeError{message: "decode failed"})
    assert SentryFilter.before_send(ev) == ev
  end
end
'''}),
        ("r", "Created test/arrivals/sentry_filter_test.exs"),
        run("mix test test/arrivals/sentry_filter_test.exs"),
        ("r", '''Compiling 1 file (.ex)
Running ExUnit with seed: 90871, max_cases: 16

...
Finished in 0.06 seconds (0.06s async, 0.00s sync)
3 tests, 0 failures'''),
        *commit("Drop transient Orbitrak transport errors from Sentry (before_send filter)"),
    ),
    # ------------------------------------------------------------------ O08
    session(
        "nearby-stops-gist-index",
        ("u", "/api/v1/stops/nearby?lat=..&lon=..&radius=400 takes ~800ms in prod. hopline calls it on every app open. why so slow"),
        run('''psql "$PROD_RO_URL" -c "explain analyze select stop_id, stop_name from stops where feed_version = '2025-01-pick' and st_dwithin(geog, st_makepoint(-122.4443, 47.2529)::geography, 400) limit 50;"'''),
        ("r", '''                                                    QUERY PLAN
------------------------------------------------------------------------------------------------------------------
 Limit  (cost=0.00..2381.77 rows=50 width=31) (actual time=0.412..781.305 rows=23 loops=1)
   ->  Seq Scan on stops  (cost=0.00..37716.11 rows=792 width=31) (actual time=0.409..781.288 rows=23 loops=1)
         Filter: ((feed_version = '2025-01-pick'::text) AND st_dwithin(geog, '0101000020E6100000F4FDD478E99C5EC0DC68006F81A04740'::geography, '400'::double precision, true))
         Rows Removed by Filter: 23770
 Planning Time: 0.301 ms
 Execution Time: 781.352 ms
(6 rows)'''),
        ("a", "Seq scan over all ~23.8k stop rows (3 feed versions), with a spherical distance computation on each. There's no spatial index on `stops.geog`: the only index on `stops` is the `(feed_version, stop_id)` primary key. `ST_DWithin` on geography can use a GIST index, so this should drop to a few ms. Since Hopline is hitting it in prod, I'll build the index `CONCURRENTLY` so the table isn't locked, which means the migration has to disable the DDL transaction and the migration lock."),
        ("c", F, {"operation": "create_file", "path": "priv/repo/migrations/20250203181500_add_gist_index_to_stops_geog.exs", "content": r'''defmodule Arrivals.Repo.Migrations.AddGistIndexToStopsGeog do
  use Ecto.Migration

  # CREATE INDEX CONCURRENTLY can't run inside a transaction
  @disable_ddl_transaction true
  @disable_migration_lock true

  def change do
    create index(:stops, [:geog], using: "GIST", concurrently: true, name: :stops_geog_gist_idx)
  end
end
'''}),
        ("r", "Created priv/repo/migrations/20250203181500_add_gist_index_to_stops_geog.exs"),
        run('''mix ecto.migrate && psql "$DEV_URL" -c "explain analyze select stop_id, stop_name from stops where feed_version = '2025-01-pick' and st_dwithin(geog, st_makepoint(-122.4443, 47.2529)::geography, 400) limit 50;" | grep -E "Index|Execution"'''),
        ("r", '''18:15:02.114 [info] == Running 20250203181500 Arrivals.Repo.Migrations.AddGistIndexToStopsGeog.change/0 forward
18:15:02.115 [info] create index concurrently if not exists stops_geog_gist_idx
18:15:02.431 [info] == Migrated 20250203181500 in 0.3s
   ->  Index Scan using stops_geog_gist_idx on stops  (cost=0.28..33.95 rows=1 width=31) (actual time=0.188..1.402 rows=23 loops=1)
         Index Cond: (geog && _st_expand('0101000020E6100000F4FDD478E99C5EC0DC68006F81A04740'::geography, '400'::double precision))
 Execution Time: 1.461 ms'''),
        ("u", "781ms -> 1.4ms lol. commit"),
        *commit("Add GIST index on stops.geog for nearby-stops queries"),
    ),
    # ------------------------------------------------------------------ O09
    session(
        "etag-cache-headers-static-endpoints",
        ("u", "third parties hammer /api/v1/stops and /api/v1/routes even though those only change when a new gtfs feed gets activated. can we add etag + cache-control so clients and the city's CDN can cache them"),
        read("lib/arrivals_web/router.ex"),
        ("r", r'''defmodule ArrivalsWeb.Router do
  use ArrivalsWeb, :router

  pipeline :api do
    plug :accepts, ["json"]
    plug ArrivalsWeb.Plugs.ApiKey
    plug ArrivalsWeb.Plugs.RateLimit
  end

  scope "/api/v1", ArrivalsWeb.Api.V1 do
    pipe_through :api

    get "/routes", RouteController, :index
    get "/routes/:id", RouteController, :show
    get "/stops", StopController, :index
    get "/stops/nearby", StopController, :nearby
    get "/stops/:id", StopController, :show
    get "/stops/:id/predictions", PredictionController, :by_stop
    get "/predictions", PredictionController, :index
    get "/vehicles", VehicleController, :index
    get "/alerts", AlertController, :index
  end

  # ... dispatch console / boards scopes ...
end
'''),
        ("a", "Since these responses only change when the active feed version changes, the ETag can be derived from the feed version plus the request path and query. That way we can answer `If-None-Match` with a 304 before touching the DB at all. I'll make it a small plug used in a separate pipeline only for the static-data routes. `/stops/nearby` stays out, because results depend on lat/lon and caching them at the CDN would mostly be misses."),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals_web/plugs/static_data_cache.ex", "content": r'''defmodule ArrivalsWeb.Plugs.StaticDataCache do
  @moduledoc """
  ETag/Cache-Control for endpoints that only change when a GTFS feed version is
  activated (/routes, /stops). The ETag is derived from the active feed version,
  so a matching If-None-Match is answered with 304 without hitting the DB.
  """
  import Plug.Conn
  @behaviour Plug

  @impl true
  def init(opts), do: Keyword.get(opts, :max_age, 300)

  @impl true
  def call(conn, max_age) do
    etag = ~s(W/") <> etag_for(conn) <> ~s(")

    conn =
      conn
      |> put_resp_header("etag", etag)
      |> put_resp_header("cache-control", "public, max-age=#{max_age}, stale-while-revalidate=60")
      |> put_resp_header("vary", "accept-encoding")

    if etag in get_req_header(conn, "if-none-match") do
      conn |> send_resp(304, "") |> halt()
    else
      conn
    end
  end

  defp etag_for(conn) do
    :crypto.hash(:sha256, [Arrivals.Gtfs.active_version(), conn.request_path, conn.query_string])
    |> Base.url_encode64(padding: false)
    |> binary_part(0, 22)
  end
end
'''}),
        ("r", "Created lib/arrivals_web/plugs/static_data_cache.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/router.ex",
                  "old_string": '''  scope "/api/v1", ArrivalsWeb.Api.V1 do
    pipe_through :api

    get "/routes", RouteController, :index
    get "/routes/:id", RouteController, :show
    get "/stops", StopController, :index
    get "/stops/nearby", StopController, :nearby
    get "/stops/:id", StopController, :show
''',
                  "new_string": '''  pipeline :static_data do
    plug ArrivalsWeb.Plugs.StaticDataCache, max_age: 300
  end

  scope "/api/v1", ArrivalsWeb.Api.V1 do
    pipe_through [:api, :static_data]

    get "/routes", RouteController, :index
    get "/routes/:id", RouteController, :show
    get "/stops", StopController, :index
  end

  scope "/api/v1", ArrivalsWeb.Api.V1 do
    pipe_through :api

    get "/stops/nearby", StopController, :nearby
    get "/stops/:id", StopController, :show
'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/router.ex"),
        run('''E=$(curl -s -D - -o /dev/null -H "x-api-key: $DEV_KEY" localhost:4000/api/v1/routes | grep -i '^etag' | cut -d' ' -f2 | tr -d '\\r'); echo "etag=$E"; curl -s -o /dev/null -w "%{http_code}\\n" -H "x-api-key: $DEV_KEY" -H "If-None-Match: $E" localhost:4000/api/v1/routes'''),
        ("r", '''etag=W/"mQ3v0JxGZ8kTqE1bN7cYpA"
304'''),
        ("u", "nice. commit"),
        *commit("ETag + Cache-Control for /api/v1/routes and /api/v1/stops keyed on active feed version"),
    ),
    # ------------------------------------------------------------------ O10
    session(
        "rate-limit-retry-after-header",
        ("u", "sofia says our 429s have no Retry-After header so their client just backs off blindly (exponential up to a minute). can we add Retry-After and the usual X-RateLimit-* headers"),
        read("lib/arrivals_web/plugs/rate_limit.ex"),
        ("r", r'''defmodule ArrivalsWeb.Plugs.RateLimit do
  @moduledoc """
  Fixed-window rate limiting in Redis. Window = 60s. The limit comes from the api
  key's tier (see :tiers in config); anonymous requests are keyed by client IP.
  """
  import Plug.Conn
  @behaviour Plug

  @window 60

  @impl true
  def init(opts), do: opts

  @impl true
  def call(conn, _opts) do
    {id, tier} = identity(conn)

    case limit_for(tier) do
      :unlimited ->
        conn

      limit ->
        bucket = div(System.system_time(:second), @window)
        key = "rl:#{id}:#{bucket}"
        {:ok, [count, _]} = Redix.pipeline(redis(), [["INCR", key], ["EXPIRE", key, @window * 2]])

        if count > limit do
          conn
          |> put_resp_content_type("application/json")
          |> send_resp(429, ~s({"error":"rate_limited"}))
          |> halt()
        else
          conn
        end
    end
  end

  defp identity(%{assigns: %{api_key: %{id: id, tier: tier}}}), do: {"k#{id}", tier}
  defp identity(conn), do: {"ip#{:inet.ntoa(conn.remote_ip)}", :anonymous}

  defp limit_for(tier), do: Application.fetch_env!(:arrivals, __MODULE__)[:tiers] |> Map.fetch!(tier)
  defp redis, do: Application.fetch_env!(:arrivals, __MODULE__)[:redis]
end
'''),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/plugs/rate_limit.ex",
                  "old_string": '''      limit ->
        bucket = div(System.system_time(:second), @window)
        key = "rl:#{id}:#{bucket}"
        {:ok, [count, _]} = Redix.pipeline(redis(), [["INCR", key], ["EXPIRE", key, @window * 2]])

        if count > limit do
          conn
          |> put_resp_content_type("application/json")
          |> send_resp(429, ~s({"error":"rate_limited"}))
          |> halt()
        else
          conn
        end''',
                  "new_string": '''      limit ->
        now = System.system_time(:second)
        bucket = div(now, @window)
        reset_at = (bucket + 1) * @window
        key = "rl:#{id}:#{bucket}"
        {:ok, [count, _]} = Redix.pipeline(redis(), [["INCR", key], ["EXPIRE", key, @window * 2]])

        conn =
          conn
          |> put_resp_header("x-ratelimit-limit", Integer.to_string(limit))
          |> put_resp_header("x-ratelimit-remaining", Integer.to_string(max(limit - count, 0)))
          |> put_resp_header("x-ratelimit-reset", Integer.to_string(reset_at))

        if count > limit do
          conn
          |> put_resp_header("retry-after", Integer.to_string(max(reset_at - now, 1)))
          |> put_resp_content_type("application/json")
          |> send_resp(429, ~s({"error":"rate_limited"}))
          |> halt()
        else
          conn
        end'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/plugs/rate_limit.ex"),
        ("c", F, {"operation": "replace_string", "path": "test/arrivals_web/plugs/rate_limit_test.exs",
                  "old_string": "  describe \"anonymous\" do\n",
                  "new_string": '''  test "429 carries Retry-After within the window and rate limit headers", %{conn: conn} do
    limit = Application.fetch_env!(:arrivals, RateLimit)[:tiers][:anonymous]
    for _ <- 1..limit, do: conn |> recycle() |> RateLimit.call([])

    conn = conn |> recycle() |> RateLimit.call([])
    assert conn.status == 429
    [retry] = get_resp_header(conn, "retry-after")
    assert String.to_integer(retry) in 1..60
    assert get_resp_header(conn, "x-ratelimit-remaining") == ["0"]
  end

  describe "anonymous" do
'''}),
        ("r", "Replaced 1 occurrence in test/arrivals_web/plugs/rate_limit_test.exs"),
        run("mix test test/arrivals_web/plugs/rate_limit_test.exs"),
        ("r", '''Compiling 1 file (.ex)
Running ExUnit with seed: 44019, max_cases: 16

........
Finished in 0.4 seconds (0.0s async, 0.4s sync)
8 tests, 0 failures'''),
        ("u", "great, commit and ill tell sofia"),
        *commit("Rate limit: add Retry-After on 429 and X-RateLimit-* headers"),
    ),
    # ------------------------------------------------------------------ O11
    session(
        "ingest-service-alerts-feed",
        ("u", "orbitrak now publishes the GTFS-rt Alerts feed too (detours, stop closures). i already added ORBITRAK_ALERTS_URL to runtime.exs + the secrets as `alerts_url`. need an oban job every minute that upserts them into service_alerts with source 'orbitrak' (same table dispatchers write manual alerts to)"),
        read("config/config.exs"),
        ("r", '''...

config :arrivals, Oban,
  repo: Arrivals.Repo,
  queues: [realtime: 5, gtfs_static: 1, archive: 3, default: 10],
  plugins: [
    {Oban.Plugins.Pruner, max_age: 60 * 60 * 24 * 3},
    {Oban.Plugins.Lifeline, rescue_after: :timer.minutes(10)},
    {Oban.Plugins.Cron,
     crontab: [
       # cron is minute-granular; EnqueuePollers schedules the 4 polls at :00/:15/:30/:45
       {"* * * * *", Arrivals.Workers.EnqueuePollers},
       {"30 3 * * *", Arrivals.Workers.ImportGtfsStatic, args: %{"mode" => "nightly_check"}},
       {"15 4 * * *", Arrivals.Workers.PrunePredictions}
     ]}
  ]
...'''),
        read("lib/arrivals/alerts/service_alert.ex"),
        ("r", r'''defmodule Arrivals.Alerts.ServiceAlert do
  use Ecto.Schema
  import Ecto.Changeset

  schema "service_alerts" do
    field :source, Ecto.Enum, values: [:dispatcher, :orbitrak]
    field :external_id, :string
    field :cause, :string
    field :effect, :string
    field :header_text, :string
    field :description_text, :string
    field :active_from, :utc_datetime
    field :active_until, :utc_datetime
    field :informed_entities, {:array, :map}, default: []
    timestamps(type: :utc_datetime)
  end

  def changeset(alert, attrs) do
    alert
    |> cast(attrs, [:source, :external_id, :cause, :effect, :header_text, :description_text, :active_from, :active_until, :informed_entities])
    |> validate_required([:source, :header_text])
    |> unique_constraint([:source, :external_id])
  end
end
'''),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals/workers/poll_service_alerts.ex", "content": r'''defmodule Arrivals.Workers.PollServiceAlerts do
  @moduledoc """
  Pulls Orbitrak's GTFS-rt Alerts feed every minute and upserts into service_alerts
  (source: :orbitrak). Alerts that disappear from the feed are ended, not deleted.
  Dispatcher-entered alerts (source: :dispatcher) are never touched.
  """
  use Oban.Worker, queue: :realtime, max_attempts: 1, unique: [period: 55]

  import Ecto.Query
  alias Arrivals.Repo
  alias Arrivals.Alerts.ServiceAlert
  alias Arrivals.Realtime.{FeedClient, Alerts}

  @impl Oban.Worker
  def perform(_job) do
    with {:ok, body} <- FeedClient.fetch(:alerts) do
      now = DateTime.utc_now(:second)
      alerts = Alerts.decode(body)

      rows =
        for a <- alerts do
          Map.merge(a, %{source: :orbitrak, inserted_at: now, updated_at: now})
        end

      Repo.transaction(fn ->
        Repo.insert_all(ServiceAlert, rows,
          on_conflict: {:replace_all_except, [:id, :inserted_at]},
          conflict_target: [:source, :external_id]
        )

        ids = Enum.map(alerts, & &1.external_id)

        from(a in ServiceAlert,
          where: a.source == :orbitrak and a.external_id not in ^ids,
          where: is_nil(a.active_until) or a.active_until > ^now
        )
        |> Repo.update_all(set: [active_until: now, updated_at: now])
      end)

      :ok
    end
  end
end
'''}),
        ("r", "Created lib/arrivals/workers/poll_service_alerts.ex"),
        ("c", F, {"operation": "replace_string", "path": "config/config.exs",
                  "old_string": "       {\"* * * * *\", Arrivals.Workers.EnqueuePollers},\n",
                  "new_string": "       {\"* * * * *\", Arrivals.Workers.EnqueuePollers},\n       {\"* * * * *\", Arrivals.Workers.PollServiceAlerts},\n"}),
        ("r", "Replaced 1 occurrence in config/config.exs"),
        run("mix test test/arrivals/workers/poll_service_alerts_test.exs test/arrivals/realtime/alerts_test.exs"),
        ("r", '''Running ExUnit with seed: 671540, max_cases: 16

.....
Finished in 0.6 seconds (0.2s async, 0.4s sync)
5 tests, 0 failures'''),
        ("u", "ok. commit"),
        *commit("Ingest Orbitrak GTFS-rt Alerts into service_alerts every minute"),
    ),
    # ------------------------------------------------------------------ O12
    session(
        "departures-board-n-plus-one",
        ("u", "the departures board liveview for the transit center screens (/boards/:stop_id) does like 60 queries per refresh, saw it in the dev log. fix?"),
        run("grep -c 'QUERY OK' /tmp/board.log; grep 'QUERY OK' /tmp/board.log | sed -E 's/.*(FROM \"[a-z_]+\").*/\\1/' | sort | uniq -c"),
        ("r", '''61
      1 FROM "stop_times"
     30 FROM "routes"
     30 FROM "trips"'''),
        read("lib/arrivals/departures.ex"),
        ("r", r'''defmodule Arrivals.Departures do
  @moduledoc "Departure lists for transit center boards (/boards/:stop_id)."
  import Ecto.Query
  alias Arrivals.Repo
  alias Arrivals.Gtfs.{Route, Trip}
  alias Arrivals.Realtime.PredictionStore

  def board(stop_id, now \\ DateTime.utc_now(), limit \\ 30) do
    stop_id
    |> board_query(DateTime.to_date(now))
    |> limit(^limit)
    |> Repo.all()
    |> Enum.map(fn st ->
      trip = Repo.get_by!(Trip, trip_id: st.trip_id, feed_version: st.feed_version)
      route = Repo.get_by!(Route, route_id: trip.route_id, feed_version: st.feed_version)
      prediction = PredictionStore.get(trip.trip_id, stop_id)

      %{
        route_short_name: route.route_short_name,
        route_color: route.route_color,
        headsign: trip.trip_headsign,
        scheduled_secs: st.departure_secs,
        predicted_at: prediction && prediction.departs_at
      }
    end)
  end
'''),
        ("a", "Classic N+1: one query for the stop_times, then a `Repo.get_by!` for the trip and another for the route, per row. `board_query/2` already joins trips, so I'll join routes too and select everything needed in one query. Predictions come from ETS, so they're not part of the problem."),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/departures.ex",
                  "old_string": '''    stop_id
    |> board_query(DateTime.to_date(now))
    |> limit(^limit)
    |> Repo.all()
    |> Enum.map(fn st ->
      trip = Repo.get_by!(Trip, trip_id: st.trip_id, feed_version: st.feed_version)
      route = Repo.get_by!(Route, route_id: trip.route_id, feed_version: st.feed_version)
      prediction = PredictionStore.get(trip.trip_id, stop_id)
''',
                  "new_string": '''    stop_id
    |> board_query(DateTime.to_date(now))
    |> join(:inner, [st, t], r in Route, on: r.route_id == t.route_id and r.feed_version == t.feed_version)
    |> select([st, t, r], {st, t, r})
    |> limit(^limit)
    |> Repo.all()
    |> Enum.map(fn {st, trip, route} ->
      prediction = PredictionStore.get(trip.trip_id, stop_id)
'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals/departures.ex"),
        run("mix test test/arrivals/departures_test.exs test/arrivals_web/live/board_live_test.exs"),
        ("r", '''Compiling 1 file (.ex)
warning: unused alias Trip
  lib/arrivals/departures.ex:5

Running ExUnit with seed: 23871, max_cases: 16

.......
Finished in 0.7 seconds (0.3s async, 0.4s sync)
7 tests, 0 failures'''),
        ("u", "drop the unused alias and commit"),
        *commit("Departures board: load trips and routes in one query instead of per row"),
    ),
    # ------------------------------------------------------------------ O13
    session(
        "dispatch-bunching-badge",
        ("u", "kwame's out this week. can you add a 'bunching' badge on the dispatch console: two or more vehicles on the same route + direction within 400 m of each other. just a badge on the marker + a count in the header, nothing fancy"),
        read("lib/arrivals_web/live/dispatch_live.ex"),
        ("r", r'''defmodule ArrivalsWeb.DispatchLive do
  use ArrivalsWeb, :live_view

  alias Arrivals.Gtfs
  alias Arrivals.Realtime.VehicleStore

  @impl true
  def mount(_params, _session, socket) do
    if connected?(socket), do: Phoenix.PubSub.subscribe(Arrivals.PubSub, "vehicles")

    now = DateTime.utc_now()
    vehicles = Enum.map(VehicleStore.all(), &Map.put(&1, :stale?, VehicleStore.stale?(&1, now)))

    socket =
      socket
      |> assign(:vehicles, vehicles)
      |> assign(:routes, Gtfs.list_routes())

    {:ok, socket}
  end

  @impl true
  def handle_info({:positions, positions}, socket) do
    {:noreply, assign(socket, :vehicles, merge(socket.assigns.vehicles, positions))}
  end

  @impl true
  def render(assigns) do
    ~H"""
    <header class="console-header">
      <h1>Dispatch</h1>
      <span class="count"><%= length(@vehicles) %> vehicles</span>
    </header>
    <div id="map" phx-hook="DispatchMap" phx-update="ignore"></div>
    <.vehicle_marker :for={v <- @vehicles} vehicle={v} />
    """
  end

  defp merge(current, positions) do
    by_id = Map.new(positions, &{&1.vehicle_id, &1})
    Enum.map(current, &Map.get(by_id, &1.vehicle_id, &1)) ++
      Enum.reject(positions, fn p -> Enum.any?(current, &(&1.vehicle_id == p.vehicle_id)) end)
  end
end
'''),
        ("c", F, {"operation": "create_file", "path": "lib/arrivals/realtime/bunching.ex", "content": r'''defmodule Arrivals.Realtime.Bunching do
  @moduledoc """
  Flags vehicles running within `threshold_m` of another vehicle on the same
  route and direction. ~300 vehicles at peak, so pairwise haversine per group
  is cheap enough; no PostGIS round trip needed.
  """
  @earth_radius_m 6_371_000

  @spec bunched_ids([map()], number()) :: MapSet.t()
  def bunched_ids(vehicles, threshold_m \\ 400) do
    vehicles
    |> Enum.reject(&(is_nil(&1.route_id) or Map.get(&1, :stale?, false)))
    |> Enum.group_by(&{&1.route_id, &1.direction_id})
    |> Enum.flat_map(fn {_key, group} -> close_pairs(group, threshold_m) end)
    |> MapSet.new()
  end

  defp close_pairs(group, threshold_m) do
    for a <- group, b <- group, a.vehicle_id < b.vehicle_id,
        distance_m(a, b) <= threshold_m,
        id <- [a.vehicle_id, b.vehicle_id],
        do: id
  end

  def distance_m(%{lat: lat1, lon: lon1}, %{lat: lat2, lon: lon2}) do
    dlat = deg2rad(lat2 - lat1)
    dlon = deg2rad(lon2 - lon1)
    a = :math.pow(:math.sin(dlat / 2), 2) + :math.cos(deg2rad(lat1)) * :math.cos(deg2rad(lat2)) * :math.pow(:math.sin(dlon / 2), 2)
    2 * @earth_radius_m * :math.asin(:math.sqrt(a))
  end

  defp deg2rad(d), do: d * :math.pi() / 180
end
'''}),
        ("r", "Created lib/arrivals/realtime/bunching.ex"),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals_web/live/dispatch_live.ex",
                  "old_string": '''    ~H"""
    <header class="console-header">
      <h1>Dispatch</h1>
      <span class="count"><%= length(@vehicles) %> vehicles</span>
    </header>
    <div id="map" phx-hook="DispatchMap" phx-update="ignore"></div>
    <.vehicle_marker :for={v <- @vehicles} vehicle={v} />
    """''',
                  "new_string": '''    assigns = assign(assigns, :bunched, Arrivals.Realtime.Bunching.bunched_ids(assigns.vehicles))

    ~H"""
    <header class="console-header">
      <h1>Dispatch</h1>
      <span class="count"><%= length(@vehicles) %> vehicles</span>
      <span :if={MapSet.size(@bunched) > 0} class="badge badge-warning">
        <%= MapSet.size(@bunched) %> bunched
      </span>
    </header>
    <div id="map" phx-hook="DispatchMap" phx-update="ignore"></div>
    <.vehicle_marker :for={v <- @vehicles} vehicle={v} bunched={MapSet.member?(@bunched, v.vehicle_id)} />
    """'''}),
        ("r", "Replaced 1 occurrence in lib/arrivals_web/live/dispatch_live.ex"),
        run("mix test test/arrivals/realtime/bunching_test.exs test/arrivals_web/live/dispatch_live_test.exs"),
        ("r", '''Compiling 3 files (.ex)
Running ExUnit with seed: 508331, max_cases: 16

.......
Finished in 0.9 seconds (0.5s async, 0.4s sync)
7 tests, 0 failures'''),
        ("u", "looks right on my local with the replay data, 2 bunched on route 1 near the hospital. commit"),
        *commit("Dispatch console: bunching badge for vehicles within 400 m on same route/direction"),
    ),
    # ------------------------------------------------------------------ O14
    session(
        "release-image-elixir-1-17",
        ("u", "bump the release image to elixir 1.17.3 / otp 27. i already bumped .tool-versions (ci reads it). Dockerfile is the phx.gen.release one"),
        read("Dockerfile"),
        ("r", '''# Generated by phx.gen.release
ARG ELIXIR_VERSION=1.16.2
ARG OTP_VERSION=26.2.5
ARG DEBIAN_VERSION=bookworm-20240513-slim

ARG BUILDER_IMAGE="hexpm/elixir:${ELIXIR_VERSION}-erlang-${OTP_VERSION}-debian-${DEBIAN_VERSION}"
ARG RUNNER_IMAGE="debian:${DEBIAN_VERSION}"

FROM ${BUILDER_IMAGE} as builder

RUN apt-get update -y && apt-get install -y build-essential git \\
    && apt-get clean && rm -f /var/lib/apt/lists/*_*

WORKDIR /app
RUN mix local.hex --force && mix local.rebar --force
ENV MIX_ENV="prod"

COPY mix.exs mix.lock ./
RUN mix deps.get --only $MIX_ENV
RUN mkdir config
COPY config/config.exs config/${MIX_ENV}.exs config/
RUN mix deps.compile

COPY priv priv
COPY lib lib
COPY assets assets
RUN mix assets.deploy
RUN mix compile
COPY config/runtime.exs config/
COPY rel rel
RUN mix release

FROM ${RUNNER_IMAGE}
RUN apt-get update -y && apt-get install -y libstdc++6 openssl libncurses5 locales ca-certificates \\
  && apt-get clean && rm -f /var/lib/apt/lists/*_*
...'''),
        ("c", F, {"operation": "replace_string", "path": "Dockerfile",
                  "old_string": "ARG ELIXIR_VERSION=1.16.2\nARG OTP_VERSION=26.2.5\nARG DEBIAN_VERSION=bookworm-20240513-slim\n",
                  "new_string": "ARG ELIXIR_VERSION=1.17.3\nARG OTP_VERSION=27.1.2\nARG DEBIAN_VERSION=bookworm-20241016-slim\n"}),
        ("r", "Replaced 1 occurrence in Dockerfile"),
        run("docker build -t arrivals:elixir117 . 2>&1 | grep -iE 'warning|error|naming to' -A3 | head -30"),
        ("r", ''' => => naming to docker.io/library/arrivals:elixir117
#19 41.82 warning: single-quoted strings represent charlists. Use ~c"" if you indeed want a charlist or use "" instead
#19 41.82    |
#19 41.82 47 |     {:ok, files} = :zip.unzip(String.to_charlist(path), [{:cwd, 'tmp/gtfs'}])
#19 41.82    |                                                                  ~
#19 41.82    |
#19 41.82    └─ lib/arrivals/gtfs/static_importer.ex:47:59'''),
        ("a", "The image builds on 1.17.3 / OTP 27. The only new thing is the 1.17 deprecation warning for single-quoted charlists, in `static_importer.ex:47`. It's harmless in the image, but CI runs `mix compile --warnings-as-errors` and now uses 1.17 via .tool-versions, so it would fail there. Switching it to `~c\"tmp/gtfs\"`."),
        ("c", F, {"operation": "replace_string", "path": "lib/arrivals/gtfs/static_importer.ex",
                  "old_string": "[{:cwd, 'tmp/gtfs'}]",
                  "new_string": "[{:cwd, ~c\"tmp/gtfs\"}]"}),
        ("r", "Replaced 1 occurrence in lib/arrivals/gtfs/static_importer.ex"),
        ("u", "ok commit"),
        *commit("Release image: Elixir 1.17.3 / OTP 27.1.2; fix charlist deprecation in StaticImporter"),
    ),
    # ------------------------------------------------------------------ O15
    session(
        "tzdata-autoupdate-in-ci",
        ("u", "the CI test step sometimes takes 4+ minutes instead of ~1 and the log has `[warning] tzdata: failed to fetch release info` a bunch of times. related?"),
        read("config/test.exs"),
        ("r", '''import Config

config :arrivals, Arrivals.Repo,
  url: System.get_env("DATABASE_URL", "ecto://postgres:postgres@localhost/arrivals_test"),
  pool: Ecto.Adapters.SQL.Sandbox,
  pool_size: System.schedulers_online() * 2

config :arrivals, ArrivalsWeb.Endpoint, server: false
config :arrivals, Oban, testing: :manual
config :logger, level: :warning
config :phoenix, :plug_init_mode, :runtime
'''),
        run('grep -rn "tzdata\\|time_zone_database" config/ mix.exs'),
        ("r", '''config/config.exs:12:config :elixir, :time_zone_database, Tzdata.TimeZoneDatabase
mix.exs:58:      {:tzdata, "~> 1.1"},'''),
        ("a", '''Yes, most likely. By default tzdata starts an auto-updater when the app boots, and in every env that includes `mix test`. It calls IANA over the network to check for a newer release. On GitHub runners that request sometimes hangs until hackney's timeout, and the updater retries. Meanwhile the ETS table is being swapped out from under tests that use `America/Los_Angeles` (all the schedule and service day tests), which is why it's slow rather than failing.

Tests shouldn't depend on the network anyway. Turn autoupdate off in `config/test.exs`, and the bundled tzdata release from the hex package is used. For prod I'd leave the updater on for now (DST rule changes do happen), though arguably bumping the package via dependabot is cleaner.'''),
        ("c", F, {"operation": "replace_string", "path": "config/test.exs",
                  "old_string": "config :phoenix, :plug_init_mode, :runtime\n",
                  "new_string": "config :phoenix, :plug_init_mode, :runtime\n\n# no network calls to IANA during tests; use the tz data bundled with the hex package\nconfig :tzdata, :autoupdate, :disabled\n"}),
        ("r", "Replaced 1 occurrence in config/test.exs"),
        run("time mix test 2>&1 | tail -2"),
        ("r", '''Finished in 13.9 seconds (6.0s async, 7.9s sync)
241 tests, 0 failures

real	0m21.604s
user	0m48.117s
sys	0m6.732s'''),
        ("u", "just test for now, agreed on prod. commit"),
        *commit("test: disable tzdata autoupdate (network calls slowed CI)"),
    ),
    # ------------------------------------------------------------------ O16
    session(
        "trip-updates-decode-fixture-tests",
        ("u", "TripUpdates.decode/1 has zero tests. grab a real snapshot from orbitrak as a fixture and write some"),
        run('curl -sS -H "X-Orbitrak-Key: $ORBITRAK_API_KEY" "$ORBITRAK_TRIP_UPDATES_URL" -o test/fixtures/gtfsrt/trip_updates_20250204.pb && ls -la test/fixtures/gtfsrt/ && protoc --decode=transit_realtime.FeedMessage -I priv/proto priv/proto/gtfs-realtime.proto < test/fixtures/gtfsrt/trip_updates_20250204.pb | head -32'),
        ("r", '''total 412
drwxr-xr-x  2 dev dev   4096 Feb  4 10:09 .
drwxr-xr-x  5 dev dev   4096 Jan 14 15:31 ..
-rw-r--r--  1 dev dev 402377 Feb  4 10:09 trip_updates_20250204.pb
-rw-r--r--  1 dev dev  48113 Nov 19 09:47 vehicle_positions_sample.pb
header {
  gtfs_realtime_version: "2.0"
  incrementality: FULL_DATASET
  timestamp: 1738692541
}
entity {
  id: "T-24FA-7-W-1415"
  trip_update {
    trip {
      trip_id: "24FA-7-W-1415"
      start_date: "20250204"
      schedule_relationship: SCHEDULED
      route_id: "7"
      direction_id: 0
    }
    stop_time_update {
      stop_sequence: 14
      arrival {
        delay: 182
        time: 1738692722
      }
      stop_id: "1187"
    }
    stop_time_update {
      stop_sequence: 15
      arrival {
        delay: 175
        time: 1738692835
      }
      stop_id: "1191"'''),
        read("lib/arrivals/realtime/trip_updates.ex"),
        ("r", r'''defmodule Arrivals.Realtime.TripUpdates do
  @moduledoc "Decodes GTFS-rt TripUpdates into per-stop predictions."
  alias TransitRealtime.{FeedMessage, TripUpdate}

  def decode(binary) do
    %FeedMessage{entity: entities} = FeedMessage.decode(binary)

    for %{trip_update: %TripUpdate{trip: trip} = tu} <- entities,
        trip.schedule_relationship != :CANCELED,
        stu <- tu.stop_time_update,
        stu.schedule_relationship != :SKIPPED do
      %{
        trip_id: trip.trip_id,
        route_id: trip.route_id,
        start_date: trip.start_date,
        stop_id: stu.stop_id,
        stop_sequence: stu.stop_sequence,
        arrives_at: event_time(stu.arrival),
        departs_at: event_time(stu.departure) || event_time(stu.arrival),
        delay_s: (stu.departure || stu.arrival || %{delay: nil}).delay
      }
    end
  end

  def lag_seconds(binary) do
    %FeedMessage{header: %{timestamp: ts}} = FeedMessage.decode(binary)
    System.system_time(:second) - ts
  end

  defp event_time(nil), do: nil
  defp event_time(%{time: nil}), do: nil
  defp event_time(%{time: t}), do: DateTime.from_unix!(t)
end
'''),
        ("c", F, {"operation": "create_file", "path": "test/arrivals/realtime/trip_updates_test.exs", "content": r'''defmodule Arrivals.Realtime.TripUpdatesTest do
  use ExUnit.Case, async: true
  alias Arrivals.Realtime.TripUpdates
  alias TransitRealtime.{FeedMessage, FeedHeader, FeedEntity, TripUpdate, TripDescriptor}

  @fixture File.read!("test/fixtures/gtfsrt/trip_updates_20250204.pb")

  test "decodes the real Orbitrak snapshot" do
    preds = TripUpdates.decode(@fixture)
    assert length(preds) > 1000

    p = Enum.find(preds, &(&1.trip_id == "24FA-7-W-1415" and &1.stop_sequence == 14))
    assert p.route_id == "7"
    assert p.stop_id == "1187"
    assert p.delay_s == 182
    assert p.arrives_at == ~U[2025-02-04 18:12:02Z]
    assert p.departs_at == p.arrives_at
  end

  test "skips canceled trips" do
    msg = %FeedMessage{
      header: %FeedHeader{gtfs_realtime_version: "2.0", timestamp: 1_738_692_541},
      entity: [
        %FeedEntity{id: "x", trip_update: %TripUpdate{
          trip: %TripDescriptor{trip_id: "c1", schedule_relationship: :CANCELED},
          stop_time_update: []
        }}
      ]
    }

    assert msg |> FeedMessage.encode() |> TripUpdates.decode() == []
  end
end
'''}),
        ("r", "Created test/arrivals/realtime/trip_updates_test.exs"),
        run("mix test test/arrivals/realtime/trip_updates_test.exs"),
        ("r", '''Running ExUnit with seed: 402993, max_cases: 16

..
Finished in 0.3 seconds (0.3s async, 0.0s sync)
2 tests, 0 failures'''),
        ("a", "Both pass against the real snapshot: the route 7 trip at stop 1187 comes out with delay 182s at 18:12:02Z, and canceled trips are dropped. The fixture is ~400 KB, which is fine to commit. If you'd rather keep the repo lean, I can trim it to a handful of entities with a small script."),
        ("u", "400k is fine. commit"),
        *commit("Tests for TripUpdates.decode/1 using a real Orbitrak snapshot fixture"),
    ),
]

J_PROBES = [
    # ---- same: need a fact, phrased with the fact's own key words
    {"text": "what's the VehiclePositions feed url on orbitrak's avl gateway again? setting up the load-test env and need the host + port",
     "kind": "same", "session": "avl-vehicle-positions-404-staging", "needles": ["avl-gw.orbitrak.net:8443"]},
    {"text": "which host port is the postgis container mapped to in our docker-compose? want to point dbeaver at my local db",
     "kind": "same", "session": "new-laptop-ecto-create-fails", "needles": ["5433"]},
    {"text": "what prefix do our prometheus metric names need so dana's alertmanager routing picks them up? adding a gauge for alerts feed lag",
     "kind": "same", "session": "feed-lag-metric-missing-in-prometheus", "needles": ["crt_rt_"]},
    {"text": "whats the kubectl context + command to get a remote iex console on the prod arrivals-worker pods? lost dana's notes",
     "kind": "same", "session": "prod-iex-console-oban-realtime-backlog", "needles": ["aks-crt-prod"]},
    {"text": "gtfs import failing again with 'stops.txt: missing required column stop_id' even though the column is there. was that the BOM from the hastus export? how did we handle it in CsvReader",
     "kind": "same", "session": "gtfs-import-stops-missing-stop-id", "needles": ["FEFF"]},
    {"text": "how do we import the next pick's gtfs zip into prod as an inactive feed version and then activate it on the service change date?",
     "kind": "same", "session": "winter-pick-gtfs-import-prod", "needles": ["Arrivals.Release.activate_feed"]},
    # ---- reworded: need a fact, asked by someone who forgot the details
    {"text": "in the small hours the rider site again shows the next evening's late buses for the overnight lines, or nothing at all. pretty sure we chased this before, what was the underlying problem?",
     "kind": "reworded", "session": "owl-routes-next-day-predictions", "needles": ["noon minus 12h"]},
    {"text": "our credentials for the bus-tracking company run out this summer. is there an actual human over there I should write to instead of opening a ticket on their help site?",
     "kind": "reworded", "session": "orbitrak-contact-ops-doc", "needles": ["rkellerman@orbitrak.net"]},
    {"text": "that third-party trip planning app that passes its riders' searches through to us, how many calls a minute did we end up allowing them?",
     "kind": "reworded", "session": "hopline-429s-partner-tier", "needles": ["2_400"]},
    {"text": "a UW researcher wants several months of historical bus location data for a study. does that survive anywhere after we process it, and where would I point them?",
     "kind": "reworded", "session": "raw-feed-archive-for-otp-analysis", "needles": ["crt-rt-archive"]},
    {"text": "ops asks: how long can a bus go without phoning home before it disappears from the rider map, and why that number?",
     "kind": "reworded", "session": "ghost-buses-stale-cutoff", "needles": ["210"]},
    {"text": "we're scaling out the web tier for the state fair. how big is each web pod's postgres pool and why was that size picked? don't want a repeat of last time",
     "kind": "reworded", "session": "db-connection-errors-after-scaling-web", "needles": ["POOL_SIZE=12"]},
    # ---- unrelated: everyday short messages
    {"text": "ok go ahead", "kind": "unrelated"},
    {"text": "still failing, same error as before", "kind": "unrelated"},
    {"text": "yep looks good, commit it", "kind": "unrelated"},
    {"text": "can you rerun just the failing test with --trace", "kind": "unrelated"},
    # ---- unrelated: new tasks sharing words with the archive
    {"text": "add wheelchair_boarding to the stop objects returned by /api/v1/stops, as true/false/null", "kind": "unrelated"},
    {"text": "write a controller test for /api/v1/predictions when the route has no trips running today", "kind": "unrelated"},
    {"text": "rename the `vehicles` assign in DispatchLive to `fleet` and update the template + tests", "kind": "unrelated"},
    {"text": "add an oban worker that deletes orbitrak service alerts whose active period ended more than 30 days ago, run it nightly", "kind": "unrelated"},
    {"text": "center the dispatch console map on the downtown transit center at zoom 14 by default instead of the whole county", "kind": "unrelated"},
    # ---- unrelated: near a covered topic, answer not in the archive
    {"text": "does GTFS-realtime have a standard field for crowding per car on multi-car vehicles, or is that only possible with an extension?", "kind": "unrelated"},
    {"text": "in oban, if i insert a unique job while an identical one is executing, does the insert fail or return the existing job? how do i tell which happened", "kind": "unrelated"},
    {"text": "is there a built-in way in liveview to throttle re-renders when pubsub messages arrive faster than once a second?", "kind": "unrelated"},
]
