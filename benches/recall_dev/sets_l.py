"""Tidewater Forge Games is a small studio that ships Skyrift Arena, a cross-platform
multiplayer mobile arena game for iOS and Android. The backend is a set of Go services
(matchmaker, inventory, receipts for Apple App Store and Google Play purchase validation,
a live-ops publishing tool), C++ dedicated game servers run as Agones fleets on GKE, Redis
(Memorystore) for matchmaking tickets, Cloud Spanner for player data, Pub/Sub for store
notifications and events, and Firebase Remote Config for live tuning. The client is Unity
(C#). Builds run on a Jenkins farm with Linux and Mac agents; observability is Grafana, Loki
and Prometheus; load tests are k6. Team: Priya Nandakumar (backend lead, Go services),
Tomasz Wierzbicki (game server engineer, C++ and Agones), Keiko Arai (SRE: GKE, Spanner,
observability), Dmitri Volkov (build engineer, Jenkins and signing), Aisha Bello (Unity
client lead), Rafael Ortega (live-ops designer, owns Remote Config), Hannah Lindqvist (QA and
load testing). External: Nadia Osei (Google Play partner developer-relations contact) and an
engineer at VantaGuard, the anti-cheat vendor whose SDK ships in the client."""
from __future__ import annotations

from dsl import F, commit, read, run, session

L_FACT: list = []
L_OTHER: list = []

# ---------------------------------------------------------------- FACT sessions (1/3)

L_FACT += [
session(
    "ranked-fleet-autoscaler-prod",
    ("u", "SKY-2231 ranked queue times spiked to 40s+ last night around 20:00 UTC. grafana shows ready gameservers at 0 for like 6 min on the ranked fleet. can you look at the autoscaler for ranked in prod"),
    read("deploy/agones/prod/ranked-s4-autoscaler.yaml"),
    ("r", """apiVersion: autoscaling.agones.dev/v1
kind: FleetAutoscaler
metadata:
  name: ranked-s4-autoscaler
  namespace: gameservers
  labels:
    app.kubernetes.io/part-of: skyrift
    season: s4
spec:
  fleetName: ranked-s4
  policy:
    type: Buffer
    buffer:
      bufferSize: 15
      minReplicas: 10
      maxReplicas: 600
  sync:
    type: FixedInterval
    fixedInterval:
      seconds: 30"""),
    run("""./scripts/promq 'sum(rate(agones_fleet_allocations_total{fleet_name="ranked-s4"}[5m]))*60' --from '2024-10-14 19:30' --to '2024-10-14 20:30' --step 5m"""),
    ("r", """time                 value
2024-10-14 19:30     11.2
2024-10-14 19:40     14.9
2024-10-14 19:50     19.7
2024-10-14 20:00     23.6
2024-10-14 20:05     24.1
2024-10-14 20:10     22.9
2024-10-14 20:20     19.3
2024-10-14 20:30     17.0"""),
    run("./scripts/gs-startup-times.sh ranked-s4 --since 24h"),
    ("r", """fleet=ranked-s4 samples=1841 (Scheduled -> Ready)
  p50   71.4s
  p90   84.2s
  p99   97.8s
  max  131.0s
slowest phase: map asset load from pd-balanced volume (avg 52s)"""),
    ("a", """Found it. At 20:00 UTC the ranked fleet was allocating about 24 servers a minute, and a ranked server needs ~84s (p90) from Scheduled to Ready, most of it the map asset load. The autoscaler only syncs every 30s and then has to wait for a cold start, so the ready buffer has to cover roughly allocations-per-minute x startup-minutes: 24 x 1.4 = ~34 servers. With the current buffer of 15 the fleet runs dry for most of a cold-start window at peak, which matches the ~6 minutes at zero ready.

I'd round that up to the next multiple of 5 so the Tuesday event spikes have a little headroom. min/max don't need to change. Cost-wise it's about 20 more idle pods off-peak, roughly 3 extra nodes."""),
    ("u", "ok do it. leave min/max alone"),
    ("c", F, {"operation": "replace_string", "path": "deploy/agones/prod/ranked-s4-autoscaler.yaml", "old": "      bufferSize: 15", "new": "      bufferSize: 35"}),
    ("r", "replaced 1 occurrence in deploy/agones/prod/ranked-s4-autoscaler.yaml"),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n gameservers diff -f deploy/agones/prod/ranked-s4-autoscaler.yaml"),
    ("r", """diff -u -N /tmp/LIVE-2291/autoscaling.agones.dev.v1.FleetAutoscaler.gameservers.ranked-s4-autoscaler /tmp/MERGED-1180/autoscaling.agones.dev.v1.FleetAutoscaler.gameservers.ranked-s4-autoscaler
--- /tmp/LIVE-2291/autoscaling.agones.dev.v1.FleetAutoscaler.gameservers.ranked-s4-autoscaler
+++ /tmp/MERGED-1180/autoscaling.agones.dev.v1.FleetAutoscaler.gameservers.ranked-s4-autoscaler
@@ -14,7 +14,7 @@
   policy:
     buffer:
-      bufferSize: 15
+      bufferSize: 35
       maxReplicas: 600
       minReplicas: 10
     type: Buffer"""),
    *commit("agones: raise ranked-s4 prod buffer to cover ~84s cold start at peak (SKY-2231)"),
    ("a", "Committed; the new buffer is the one in the diff above. It still needs a kubectl apply on the prod context; after that, worth watching the ready-gameservers panel tonight around 20:00 UTC to confirm it no longer touches zero."),
),

session(
    "play-rtdn-duplicate-grants",
    ("u", """double gems from google play purchases again. SKY-2188, support has 14 tickets since friday. from loki:
2024-10-11T18:42:07Z receipts-7c9d5b-x2lq level=info msg="granted" sku=gems_1200 purchaseToken=opkcjmhefbglXq9 player=p_88213 grantId=5b1e0c7a
2024-10-11T18:42:19Z receipts-7c9d5b-k8wz level=info msg="granted" sku=gems_1200 purchaseToken=opkcjmhefbglXq9 player=p_88213 grantId=a04f93d2
same token, two pods, 12s apart"""),
    read("services/receipts/internal/play/rtdn_handler.go"),
    ("r", """package play

// ServeHTTP handles Pub/Sub push deliveries of Google Play real-time developer notifications.
func (h *RTDNHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	env, err := decodePushEnvelope(r.Body)
	if err != nil {
		http.Error(w, "bad envelope", http.StatusBadRequest)
		return
	}
	n := env.Notification
	if n.OneTimeProductNotification == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sku, token := n.OneTimeProductNotification.Sku, n.OneTimeProductNotification.PurchaseToken
	purchase, err := h.play.GetProduct(ctx, sku, token)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	grant := inventory.Grant{
		ID:            uuid.NewString(),
		PlayerID:      purchase.ObfuscatedExternalAccountId,
		SKU:           sku,
		Source:        "play",
		PurchaseToken: token,
	}
	if err := h.inv.Apply(ctx, grant); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := h.play.Acknowledge(ctx, sku, token); err != nil {
		h.log.Warn("ack to play failed, will retry", "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}"""),
    run("gcloud pubsub subscriptions describe play-rtdn-receipts-push --project tfg-skyrift-prod --format=yaml"),
    ("r", """ackDeadlineSeconds: 10
expirationPolicy: {}
messageRetentionDuration: 604800s
name: projects/tfg-skyrift-prod/subscriptions/play-rtdn-receipts-push
pushConfig:
  oidcToken:
    audience: receipts-internal
    serviceAccountEmail: pubsub-push@tfg-skyrift-prod.iam.gserviceaccount.com
  pushEndpoint: https://receipts-internal.skyrift.tidewaterforge.io/play/rtdn
retryPolicy:
  maximumBackoff: 60s
  minimumBackoff: 5s
state: ACTIVE
topic: projects/tfg-skyrift-prod/topics/play-rtdn"""),
    ("a", """That explains it. It's a push subscription with ackDeadlineSeconds 10, so Pub/Sub treats any delivery the handler hasn't answered within 10s as failed and redelivers it, possibly to another pod. Friday was the gems sale and the inventory Apply txn had lock contention on the wallet row (Spanner commit p99 was ~14s in that window), so the first delivery was still committing when the second one arrived. Both succeed because the grant ID is a fresh uuid every time; nothing ties the grant to the purchase token.

Two fixes: make the grant idempotent on (Source, PurchaseToken) so a redelivery can't create a second row, and give the push a realistic deadline so we don't redeliver under normal contention. Doing both now."""),
    ("c", F, {"operation": "write_file", "path": "db/migrations/0047_receipt_grants_token_unique.sql", "content": "-- SKY-2188: one grant per store purchase token\nCREATE UNIQUE NULL_FILTERED INDEX ReceiptGrants_ByPurchaseToken\n  ON ReceiptGrants(Source, PurchaseToken);\n"}),
    ("r", "wrote db/migrations/0047_receipt_grants_token_unique.sql (3 lines)"),
    ("c", F, {"operation": "replace_string", "path": "services/receipts/internal/play/rtdn_handler.go", "old": "\tif err := h.inv.Apply(ctx, grant); err != nil {\n\t\thttp.Error(w, err.Error(), http.StatusInternalServerError)\n\t\treturn\n\t}", "new": "\tswitch err := h.inv.Apply(ctx, grant); {\n\tcase err == nil:\n\tcase spanner.ErrCode(err) == codes.AlreadyExists:\n\t\th.log.Info(\"duplicate delivery, grant already applied\", \"token\", token)\n\tdefault:\n\t\thttp.Error(w, err.Error(), http.StatusInternalServerError)\n\t\treturn\n\t}"}),
    ("r", "replaced 1 occurrence in services/receipts/internal/play/rtdn_handler.go"),
    run("go test ./services/receipts/internal/play/... ./services/inventory/... -run 'RTDN|Grant' -count=1"),
    ("r", """=== RUN   TestRTDNGrantsOnce
--- PASS: TestRTDNGrantsOnce (0.41s)
=== RUN   TestRTDNRedeliveryDuringSlowCommit
--- PASS: TestRTDNRedeliveryDuringSlowCommit (1.92s)
=== RUN   TestGrantApplyAlreadyExists
--- PASS: TestGrantApplyAlreadyExists (0.38s)
ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/play	3.104s
ok  	github.com/tidewaterforge/skyrift/services/inventory	2.877s"""),
    ("u", "looks good. commit, and give me a writeup i can paste in the ticket"),
    *commit("receipts: make Play grants idempotent per purchase token (SKY-2188)"),
    ("a", """Committed. Writeup for SKY-2188:

1. Symptom: players received gems twice for one Google Play purchase; 14 support tickets since 2024-10-11, all during the gems sale.
2. Cause: Play RTDN messages reach the receipts service through a Pub/Sub push subscription whose ack deadline was 10s. During the sale, the inventory grant transaction hit lock contention on the wallet row and took 12-14s to commit. Pub/Sub considered the push failed and redelivered to another pod, which granted again because every grant got a random ID.
3. Fix, part one: grants are now idempotent per store purchase. Migration 0047 adds a unique null-filtered index ReceiptGrants_ByPurchaseToken on ReceiptGrants(Source, PurchaseToken); a redelivered notification now fails the insert with AlreadyExists, which the handler treats as success and answers 204.
4. Fix, part two (needs someone with Pub/Sub admin on prod): raise the push subscription play-rtdn-receipts-push ack deadline from 10s to 90s with `gcloud pubsub subscriptions update play-rtdn-receipts-push --ack-deadline=90 --project tfg-skyrift-prod`, so normal contention doesn't trigger redelivery at all.
5. Follow-up: support can reverse the duplicate grants with the usual inventory-admin script; the query for affected players is in the ticket."""),
),

session(
    "vantaguard-sdk-escalation",
    ("u", "vantaguard sdk is crashing the android client on startup since their 4.8.0 update, native crash in libvgshield.so. who do we even escalate this to on their side?? support portal ticket has been sitting 3 days"),
    read("docs/vendors/vantaguard.md"),
    ("r", """# VantaGuard (anti-cheat)

SDK: com.vantaguard.shield (Unity package, native libs libvgshield.so / VGShield.framework)
Server API: ban reports and session attestation, see services/anticheat-bridge

## Support
- Portal: https://support.vantaguard.example/ (P3 default, 2 business days)
- Flag the ticket "production outage" to get P1 (4h response)

## Technical escalation
For SDK crashes, false-positive waves and attestation outages that the portal does not move on:
Lukas Brenner, solutions engineer assigned to our account.
- shared Slack channel #ext-vantaguard (he is in it, EU hours)
- lukas.brenner@vantaguard.example
Include: SDK version, device model, tombstone or symbolicated stack, our app id skyrift-prod.

Added by Priya after the June false-positive incident."""),
    ("a", "Technical escalation on their side is Lukas Brenner, their solutions engineer for our account: ping him in #ext-vantaguard (EU hours) or lukas.brenner@vantaguard.example. The doc also says to flag the portal ticket as \"production outage\" to get the 4h P1 response instead of the default P3; that's probably why it's been sitting. He wants SDK version, device model and a symbolicated stack."),
    ("u", "ok. pull a crash trace i can send him"),
    run("./scripts/crashlytics-export.sh --app skyrift-android --issue 8f31c0a2 --limit 1 --symbolicate"),
    ("r", """issue 8f31c0a2  "SIGSEGV in libvgshield.so"  events(24h)=3,412  users=2,977
build 4.12.0 (41203) arm64-v8a  device: Samsung SM-A536B  Android 14
*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000018
backtrace:
  #00 pc 000000000004c1f0  libvgshield.so (vg::jni::BridgeRegistry::lookup(char const*)+48)
  #01 pc 000000000004b8a4  libvgshield.so (vg::Shield::init(_JNIEnv*, _jobject*)+276)
  #02 pc 0000000000039e10  libvgshield.so (Java_com_vantaguard_shield_NativeBridge_init+64)
  #03 pc 00000000002f4a8c  /apex/com.android.art/lib64/libart.so (art_quick_generic_jni_trampoline+140)
  #04 pc 0000000000351d4c  base.apk (com.unity3d.player.UnityPlayerActivity.onCreate+0)
vgshield sdk version: 4.8.0 (build 4800.17)"""),
    ("a", """Here's a message you can send him:

"Hi Lukas - since updating com.vantaguard.shield to 4.8.0 (build 4800.17) our Android client (app id skyrift-prod, build 4.12.0/41203, arm64-v8a) crashes on startup: SIGSEGV in vg::jni::BridgeRegistry::lookup called from Shield::init, fault addr 0x18. ~3.4k events / 3k users in 24h, mostly Samsung A-series on Android 14. Portal ticket has been open 3 days. Symbolicated tombstone attached. Is there a known issue with BridgeRegistry in 4.8.0?"

Attach the export above."""),
    ("u", "also pin the sdk back to 4.7.2 in the client for the hotfix build"),
    read("Packages/manifest.json"),
    ("r", """{
  "dependencies": {
    "com.google.firebase.remote-config": "11.9.0",
    "com.google.firebase.crashlytics": "11.9.0",
    "com.unity.addressables": "1.21.19",
    "com.unity.inputsystem": "1.7.0",
    "com.vantaguard.shield": "4.8.0",
    "com.tidewaterforge.skyrift.netcode": "file:../Packages-local/netcode"
  },
  "scopedRegistries": [
    { "name": "VantaGuard", "url": "https://upm.vantaguard.example", "scopes": ["com.vantaguard"] }
  ]
}"""),
    ("c", F, {"operation": "replace_string", "path": "Packages/manifest.json", "old": "\"com.vantaguard.shield\": \"4.8.0\"", "new": "\"com.vantaguard.shield\": \"4.7.2\""}),
    ("r", "replaced 1 occurrence in Packages/manifest.json"),
    *commit("client: roll VantaGuard shield back to 4.7.2, 4.8.0 crashes on init (SKY-2270)"),
    ("a", "Pinned to 4.7.2 and committed. The hotfix build will pick it up on the next Jenkins android-release run."),
),

session(
    "unity-editor-version-pin",
    ("u", "aisha wants to bump unity to 2022.3.24f1 for the input system fix. i remember we pinned the editor for some reason but not why. dig it up"),
    run("git log --oneline -S '2022.3.21f1' -- ProjectSettings/ProjectVersion.txt ci/"),
    ("r", """e41a7c2 ci: agents install only the pinned editor from ProjectVersion.txt
9c0d3be pin editor: 2022.3.22f1+ strips VantaGuard JNI callbacks in IL2CPP release (SKY-1874)"""),
    run("git show 9c0d3be --stat"),
    ("r", """commit 9c0d3be5f1a27e6c0b8d44c1e39f02a6d7b1c8e3
Author: Aisha Bello <aisha@tidewaterforge.io>
Date:   Tue Jul 9 14:02:11 2024 +0200

    pin editor: 2022.3.22f1+ strips VantaGuard JNI callbacks in IL2CPP release (SKY-1874)

    From 2022.3.22f1 the managed code stripper removes the static callback methods
    that VantaGuard's native lib calls back into via JNI (they have no managed callers
    and no [Preserve]). Release IL2CPP Android builds then die on first attestation
    with MissingMethodException inside NativeBridge.OnVerdict. Development builds
    are fine because stripping level is Minimal there.

    Stay on 2022.3.21f1 until VantaGuard ships a link.xml in their package or we
    own one. Do not bump without a release-config device smoke test.

 ProjectSettings/ProjectVersion.txt | 4 ++--
 ci/unity-versions.txt              | 2 +-
 2 files changed, 3 insertions(+), 3 deletions(-)"""),
    ("a", "We're pinned to 2022.3.21f1 because from 2022.3.22f1 the IL2CPP managed stripping removes the VantaGuard JNI callback methods, and Android release builds crash on the first attestation (SKY-1874). Dev builds hide it because they use Minimal stripping. The commit says: don't bump without a release-config device smoke test. Want me to try 24f1 on the test agent?"),
    ("u", "yeah try it on mac-agent-07, android release config, run the smoke"),
    run("ssh jenkins@mac-agent-07 './ci/unity-build.sh --editor 2022.3.24f1 --target Android --config Release --out /tmp/sky-24f1 && ./ci/device-smoke.sh --apk /tmp/sky-24f1/skyrift.apk --device pixel7-lab-2'"),
    ("r", """[unity-build] editor 2022.3.24f1 (override, not ProjectVersion)
[unity-build] IL2CPP stripping: High   scripting backend: IL2CPP   arch: ARM64
[unity-build] Build succeeded in 18m42s -> /tmp/sky-24f1/skyrift.apk (212.4 MB)
[device-smoke] installing on pixel7-lab-2 ... ok
[device-smoke] launch ... ok
[device-smoke] waiting for main menu ...
E Unity   : MissingMethodException: Method not found: void VantaGuard.Shield.NativeBridge.OnVerdict(System.Int32, System.String)
E Unity   :   at VantaGuard.Shield.NativeBridge.Dispatch (System.IntPtr msg) [0x00000] in <00000000000000000000000000000000>:0
[device-smoke] FAIL: app exited during attestation (pid 21877), 9.8s after launch"""),
    ("a", "Still broken on 24f1: same MissingMethodException in NativeBridge.OnVerdict on the release build. So the pin stays until we add our own link.xml preserving the VantaGuard.Shield assembly (or they ship one). I can do the link.xml route separately if Aisha really needs 24f1."),
    ("u", "leave it pinned for now. add a note in the client readme so nobody bumps it blindly"),
    ("c", F, {"operation": "replace_string", "path": "client/README.md", "old": "## Editor version\n", "new": "## Editor version\n\nThe editor is pinned to 2022.3.21f1 (see ProjectSettings/ProjectVersion.txt). 2022.3.22f1 and later, including 24f1, strip the VantaGuard JNI callbacks in IL2CPP release builds and the Android app crashes on first attestation (SKY-1874). Do not bump without a link.xml for VantaGuard.Shield and a release-config device smoke test (ci/device-smoke.sh).\n"}),
    ("r", "replaced 1 occurrence in client/README.md"),
    *commit("client: document why the Unity editor is pinned (SKY-1874)"),
    ("a", "Committed the README note."),
),
]

# ---------------------------------------------------------------- FACT sessions (2/3)

L_FACT += [
session(
    "staging-redis-host-after-migration",
    ("u", """matchmaker in staging cant reach redis since keiko's memorystore migration:
level=error msg="ticket store ping failed" err="dial tcp 10.128.9.20:6379: i/o timeout" attempt=14
whats the new host"""),
    run("gcloud redis instances list --region us-central1 --project tfg-skyrift-staging"),
    ("r", """INSTANCE_NAME        VERSION    REGION       TIER         SIZE_GB  HOST          PORT  NETWORK         RESERVED_IP       STATUS  CREATE_TIME
mm-tickets-staging   REDIS_7_0  us-central1  STANDARD_HA  5        10.128.14.5   6378  skyrift-vpc     10.128.14.0/29    READY   2024-10-08T09:12:44"""),
    ("a", "The new staging instance is mm-tickets-staging at 10.128.14.5, port 6378. The port changed because the new instance has in-transit encryption on: Memorystore serves TLS on 6378, not 6379. So the matchmaker needs the new address and TLS enabled, with the instance's CA."),
    ("c", F, {"operation": "replace_string", "path": "deploy/matchmaker/overlays/staging/configmap.yaml", "old": "  REDIS_ADDR: \"10.128.9.20:6379\"\n  REDIS_TLS: \"false\"\n  REDIS_CA_FILE: \"\"", "new": "  REDIS_ADDR: \"10.128.14.5:6378\"\n  REDIS_TLS: \"true\"\n  REDIS_CA_FILE: /etc/redis-ca/server-ca.pem"}),
    ("r", "replaced 1 occurrence in deploy/matchmaker/overlays/staging/configmap.yaml"),
    ("u", "tls needs the ca mounted too right"),
    run("gcloud redis instances describe mm-tickets-staging --region us-central1 --project tfg-skyrift-staging --format='value(serverCaCerts[0].cert)' > /tmp/server-ca.pem && kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm create secret generic redis-ca --from-file=server-ca.pem=/tmp/server-ca.pem --dry-run=client -o yaml | kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging apply -f - && kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging apply -k deploy/matchmaker/overlays/staging && kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm rollout status deploy/matchmaker"),
    ("r", """secret/redis-ca created
configmap/matchmaker-env configured
deployment.apps/matchmaker configured
Waiting for deployment "matchmaker" rollout to finish: 1 of 3 updated replicas are available...
Waiting for deployment "matchmaker" rollout to finish: 2 of 3 updated replicas are available...
deployment "matchmaker" successfully rolled out"""),
    run("kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm logs deploy/matchmaker --since=2m | grep -i redis"),
    ("r", """level=info msg="ticket store connected" addr=10.128.14.5:6378 tls=true ca=/etc/redis-ca/server-ca.pem
level=info msg="director loop started" interval=1s pools=ranked,casual,custom"""),
    ("u", "ok that worked, thanks. commit the overlay"),
    *commit("matchmaker(staging): point at mm-tickets-staging Memorystore with TLS"),
    ("a", "Overlay committed. The redis-ca secret was created straight in the cluster from the instance CA, so it is not in git; the base deployment already mounts it at /etc/redis-ca."),
),

session(
    "ios-release-signing-credentials",
    ("u", """jenkins ios-release failing at the upload stage, dmitri is out till monday:
[Pipeline] sh
+ ./ci/fetch_asc_key.sh
ERROR: (gcloud.secrets.versions.access) argument --secret: expected one argument
Error: No App Store Connect API key found at build/asc/AuthKey.p8
where do the signing / api creds actually live now"""),
    read("ci/Jenkinsfile.ios"),
    ("r", """pipeline {
  agent { label 'mac && xcode' }
  environment {
    UNITY_PROJECT = "${WORKSPACE}"
    EXPORT_METHOD = 'app-store'
  }
  stages {
    stage('Unity export') { steps { sh './ci/unity-build.sh --target iOS --config Release --out build/ios' } }
    stage('Archive') {
      steps {
        withCredentials([
          certificate(credentialsId: 'skyrift-ios-dist-p12', keystoreVariable: 'DIST_P12', passwordVariable: 'DIST_P12_PASS'),
          file(credentialsId: 'skyrift-ios-appstore-profile', variable: 'PROFILE')
        ]) {
          sh './ci/ios-archive.sh'
        }
      }
    }
    stage('Upload') {
      steps {
        sh './ci/fetch_asc_key.sh'
        sh 'xcrun altool --upload-app -f build/ios/Skyrift.ipa --apiKey "$ASC_KEY_ID" --apiIssuer "$ASC_ISSUER_ID"'
      }
    }
  }
}"""),
    read("ci/fetch_asc_key.sh"),
    ("r", """#!/usr/bin/env bash
# Pulls the App Store Connect API key (.p8) from Secret Manager. Name/project come from
# the Jenkins folder environment (mobile/), set by Dmitri.
set -euo pipefail
mkdir -p build/asc
gcloud secrets versions access latest --secret=${ASC_SECRET_NAME} --project=${ASC_SECRET_PROJECT} > build/asc/AuthKey.p8
chmod 600 build/asc/AuthKey.p8"""),
    run("gcloud secrets list --project tfg-build-secrets --filter='labels.app=skyrift AND labels.platform=ios' --format='table(name,createTime,labels)'"),
    ("r", """NAME                       CREATE_TIME                  LABELS
asc-api-key-skyrift        2024-08-19T10:03:51          app=skyrift;platform=ios;owner=dvolkov
asc-api-key-skyrift-2023   2023-05-02T08:44:10          app=skyrift;platform=ios;owner=dvolkov;state=revoked"""),
    ("a", """Found it. It looks like the mobile/ folder in Jenkins lost its environment block (probably in last week's Jenkins migration), so ASC_SECRET_NAME and ASC_SECRET_PROJECT are empty and gcloud gets `--secret=` with nothing.

Where things live:
1. Distribution certificate + password: Jenkins credential skyrift-ios-dist-p12 (certificate type), in the mobile/ folder.
2. Provisioning profile: Jenkins credential skyrift-ios-appstore-profile (secret file), same folder.
3. App Store Connect API key (.p8): Secret Manager in the tfg-build-secrets project, the non-revoked secret in the listing above; the -2023 one is revoked.

The key ID and issuer ID come from the same folder env, so those are missing too."""),
    ("u", "ok just put the secret name + project in the jenkinsfile env block, not the value obviously. key id / issuer id are in the same doc dmitri keeps, ill add those to the folder"),
    ("c", F, {"operation": "replace_string", "path": "ci/Jenkinsfile.ios", "old": "    EXPORT_METHOD = 'app-store'\n", "new": "    EXPORT_METHOD = 'app-store'\n    ASC_SECRET_NAME = 'asc-api-key-skyrift'\n    ASC_SECRET_PROJECT = 'tfg-build-secrets'\n"}),
    ("r", "replaced 1 occurrence in ci/Jenkinsfile.ios"),
    *commit("ci(ios): set App Store Connect secret name/project in the Jenkinsfile"),
    ("a", "Committed, so the secret name and project no longer depend on the folder env. Once the key ID and issuer ID are back in the mobile/ folder env, rerun ios-release and the upload stage should find the key."),
),

session(
    "k6-matchmaking-soak-setup",
    ("u", "hannah wants a matchmaking soak against staging before S4 mid-season. 4k concurrent players, 45 min, metrics into prometheus so we can see it in grafana. set up the k6 run"),
    read("loadtest/k6/matchmaking_soak.js"),
    ("r", """import { check, sleep } from 'k6';
import { Trend } from 'k6/metrics';
import grpc from 'k6/net/grpc';

const client = new grpc.Client();
client.load(['../../proto'], 'matchmaker/v1/frontend.proto');
const timeToMatch = new Trend('time_to_match', true);
const TARGETS = { staging: 'mm-frontend.staging.skyrift.tidewaterforge.io:443' };

export default function () {
  client.connect(TARGETS[__ENV.TARGET], {});
  const start = Date.now();
  const t = client.invoke('matchmaker.v1.Frontend/CreateTicket', { pool: 'ranked', region: __ENV.MM_REGION, mmr: 1000 + Math.floor(Math.random() * 1500) });
  check(t, { 'ticket created': (r) => r && r.status === grpc.StatusOK });
  let assigned = false;
  for (let i = 0; i < 60 && !assigned; i++) {
    sleep(2);
    const g = client.invoke('matchmaker.v1.Frontend/GetTicket', { id: t.message.id });
    assigned = !!(g.message && g.message.assignment);
  }
  if (assigned) timeToMatch.add(Date.now() - start);
  client.close();
  sleep(5 + Math.random() * 10);
}"""),
    run("k6 run --vus 4000 --duration 45m --out experimental-prometheus-rw -e TARGET=staging -e MM_REGION=us-central1 loadtest/k6/matchmaking_soak.js"),
    ("r", """ERRO[0000] Output "experimental-prometheus-rw" failed: the remote write url is required, set K6_PROMETHEUS_RW_SERVER_URL"""),
    ("a", "The Prometheus remote-write output needs its URL from the environment. Our Prometheus accepts remote write on the observability namespace; I'll also turn on native histograms so time_to_match percentiles work in Grafana, and tag the run so you can filter it."),
    run("K6_PROMETHEUS_RW_SERVER_URL=http://prometheus.observability.svc:9090/api/v1/write K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true k6 run --vus 4000 --duration 45m --out experimental-prometheus-rw --tag testid=mm-soak-s4mid -e TARGET=staging -e MM_REGION=us-central1 loadtest/k6/matchmaking_soak.js"),
    ("r", """          /\\      |------| /------\\
     execution: local
        script: loadtest/k6/matchmaking_soak.js
        output: Prometheus remote write (http://prometheus.observability.svc:9090/api/v1/write)
     scenarios: (100.00%) 1 scenario, 4000 max VUs, 45m30s max duration (incl. graceful stop):
              * default: 4000 looping VUs for 45m0s (gracefulStop: 30s)

     checks.........................: 99.71% 381204 out of 382311
     data_received..................: 1.9 GB  704 kB/s
     grpc_req_duration..............: avg=38.12ms  min=4.9ms  med=21.7ms  max=2.91s   p(90)=71.3ms  p(95)=118.4ms
     iteration_duration.............: avg=28.14s   min=7.1s   med=24.9s   max=2m11s   p(90)=49.8s   p(95)=61.2s
     iterations.....................: 382311 141.6/s
     time_to_match..................: avg=11.92s   min=2.01s  med=8.04s   max=1m58s   p(90)=22.4s   p(95)=31.7s
     vus............................: 4000   min=4000  max=4000

running (45m00.4s), 0000/4000 VUs, 382311 complete and 0 interrupted iterations"""),
    ("a", """Soak finished cleanly. Summary:
- 382k matchmaking iterations, 99.71% of checks passed (the ~1.1k failures are CreateTicket timeouts in the first 2 minutes while the frontend HPA scaled from 3 to 9 pods).
- time_to_match p50 8.0s, p95 31.7s; the long tail is players at the MMR extremes.
- gRPC p95 118ms. Everything is in Prometheus under testid=mm-soak-s4mid."""),
    ("u", "great. put the exact command in a make target so we stop reconstructing it every season"),
    ("c", F, {"operation": "replace_string", "path": "loadtest/Makefile", "old": ".PHONY: inventory-spike\n", "new": ".PHONY: inventory-spike mm-soak\n\n# Matchmaking soak against staging (Hannah, S4 mid-season baseline).\nmm-soak:\n\tK6_PROMETHEUS_RW_SERVER_URL=http://prometheus.observability.svc:9090/api/v1/write \\\n\tK6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true \\\n\tk6 run --vus 4000 --duration 45m --out experimental-prometheus-rw \\\n\t  --tag testid=$${TESTID:-mm-soak} -e TARGET=staging -e MM_REGION=us-central1 \\\n\t  k6/matchmaking_soak.js\n"}),
    ("r", "replaced 1 occurrence in loadtest/Makefile"),
    *commit("loadtest: add mm-soak make target (4k VUs / 45m against staging)"),
    ("a", "Added `make -C loadtest mm-soak` (optionally TESTID=...) and committed."),
),

session(
    "remote-config-publish-window",
    ("u", "SKY-2140 postmortem action items. the weekend xp multiplier went out as 10 instead of 1.0 on saturday. decision from the meeting: remote config publishes only tue and thu at 15:00 UTC, never fri-sun, rafael owns the window, 2 approvals. make rcpublish refuse outside the window and write it in the runbook"),
    read("tools/rcpublish/main.go"),
    ("r", """package main

// rcpublish validates a Remote Config template from liveops/remote-config/*.json and
// publishes it through the Firebase Remote Config REST API with the template ETag.
func main() {
	env := flag.String("env", "staging", "staging|prod")
	file := flag.String("file", "", "template json")
	approvers := flag.String("approved-by", "", "comma separated")
	flag.Parse()

	tmpl, err := loadTemplate(*file)
	must(err)
	must(validate(tmpl))
	if *env == "prod" && len(splitNonEmpty(*approvers)) < 2 {
		fatalf("prod publish needs 2 approvers, got %q", *approvers)
	}
	must(publish(context.Background(), *env, tmpl))
}"""),
    ("c", F, {"operation": "replace_string", "path": "tools/rcpublish/main.go", "old": "\tmust(publish(context.Background(), *env, tmpl))\n}", "new": "\tif *env == \"prod\" {\n\t\tif err := checkWindow(time.Now().UTC()); err != nil && *emergency == \"\" {\n\t\t\tfatalf(\"%v (use -emergency with an incident id to override)\", err)\n\t\t}\n\t}\n\tmust(publish(context.Background(), *env, tmpl))\n}\n\n// checkWindow enforces the SKY-2140 decision: prod publishes only Tue/Thu, 15:00 UTC slot\n// (15:00-15:59), never Fri-Sun. Owner of the window: Rafael Ortega.\nfunc checkWindow(now time.Time) error {\n\tswitch now.Weekday() {\n\tcase time.Tuesday, time.Thursday:\n\t\tif now.Hour() == 15 {\n\t\t\treturn nil\n\t\t}\n\t\treturn fmt.Errorf(\"outside publish window: prod publishes at 15:00 UTC on Tue/Thu, now %s\", now.Format(\"Mon 15:04 MST\"))\n\tdefault:\n\t\treturn fmt.Errorf(\"no prod publishes on %s (window is Tue/Thu 15:00 UTC)\", now.Weekday())\n\t}\n}"}),
    ("r", "replaced 1 occurrence in tools/rcpublish/main.go"),
    run("go test ./tools/rcpublish/... -count=1"),
    ("r", """# github.com/tidewaterforge/skyrift/tools/rcpublish
tools/rcpublish/main.go:19:48: undefined: emergency
FAIL	github.com/tidewaterforge/skyrift/tools/rcpublish [build failed]"""),
    ("c", F, {"operation": "replace_string", "path": "tools/rcpublish/main.go", "old": "\tapprovers := flag.String(\"approved-by\", \"\", \"comma separated\")\n", "new": "\tapprovers := flag.String(\"approved-by\", \"\", \"comma separated\")\n\temergency := flag.String(\"emergency\", \"\", \"incident id; allows a prod publish outside the window\")\n"}),
    ("r", "replaced 1 occurrence in tools/rcpublish/main.go"),
    run("go test ./tools/rcpublish/... -count=1 -v -run Window"),
    ("r", """=== RUN   TestCheckWindow
=== RUN   TestCheckWindow/tue_1500
=== RUN   TestCheckWindow/tue_1459
=== RUN   TestCheckWindow/thu_1530
=== RUN   TestCheckWindow/wed_1500
=== RUN   TestCheckWindow/sat_1500
--- PASS: TestCheckWindow (0.00s)
    --- PASS: TestCheckWindow/tue_1500 (0.00s)
    --- PASS: TestCheckWindow/tue_1459 (0.00s)
    --- PASS: TestCheckWindow/thu_1530 (0.00s)
    --- PASS: TestCheckWindow/wed_1500 (0.00s)
    --- PASS: TestCheckWindow/sat_1500 (0.00s)
PASS
ok  	github.com/tidewaterforge/skyrift/tools/rcpublish	0.012s"""),
    ("c", F, {"operation": "replace_string", "path": "docs/liveops/remote-config.md", "old": "## Publishing to prod\n", "new": "## Publishing to prod\n\nDecided in the SKY-2140 postmortem (weekend XP multiplier shipped as 10):\n\n- Prod Remote Config publishes happen only on Tuesday and Thursday at 15:00 UTC (the hour 15:00-15:59). Never Friday to Sunday.\n- Rafael Ortega owns the window; send him the diff by 12:00 UTC the same day.\n- Two approvers (`-approved-by a,b`), one of them from backend.\n- rcpublish refuses prod outside the window. `-emergency SKY-xxxx` overrides it for incidents only.\n"}),
    ("r", "replaced 1 occurrence in docs/liveops/remote-config.md"),
    *commit("rcpublish: enforce Tue/Thu prod publish window, document it (SKY-2140)"),
    ("a", "Committed both. rcpublish now refuses prod outside Tue/Thu 15:00 UTC unless -emergency gets an incident id, and the runbook has the rule, the owner and the approvals."),
),
]

# ---------------------------------------------------------------- FACT sessions (3/3)

L_FACT += [
session(
    "matchmaker-ticket-ttl",
    ("u", "SKY-2250 players stuck on 'searching...' forever after they background the app on ios and come back. do tickets never expire?? check the matchmaker config"),
    read("services/matchmaker/config/matchmaker.yaml"),
    ("r", """# matchmaker runtime config (overridable per env in deploy/matchmaker/overlays/*)
director:
  interval: 1s
  batch_size: 400
tickets:
  ticket_ttl_seconds: 0        # TODO(priya): decide, 0 = no expiry
  max_per_player: 1
  cancel_on_disconnect: false
assignment:
  allocator: agones
  allocation_timeout: 15s"""),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n mm exec deploy/matchmaker -- mmctl tickets stats --older-than 10m"),
    ("r", """pool      tickets   older_than_10m   oldest
ranked    6,214     1,873            17d 04h
casual    4,980     2,411            17d 04h
custom    311       296              9d 11h
ttl on sampled keys: -1 (no expiry) 50/50"""),
    ("a", """That's the bug. ticket_ttl_seconds is 0, which means the ticket keys never expire, and cancel_on_disconnect is off. When iOS suspends the app, the client never sends CancelTicket; on resume the client sees it still has an active ticket (max_per_player: 1) and reattaches to the stale one, which the director skipped long ago because the player's session is gone. About 4.5k tickets older than 10 minutes in prod, some 17 days old.

The client gives up on its own after 120s (MatchmakingClient.SearchTimeout in Unity). I'd set the TTL to that plus a grace period so a ticket never outlives the client's search."""),
    ("u", "how much grace and why"),
    ("a", "30s. Allocation can take up to 15s after the director picks a match (allocation_timeout), plus a couple of director ticks and the client's last poll interval of ~5s; 30s covers that with some room, and a ticket that is assigned late still reaches the client before it expires. So 120 + 30 = 150. Setting it."),
    ("c", F, {"operation": "replace_string", "path": "services/matchmaker/config/matchmaker.yaml", "old": "  ticket_ttl_seconds: 0        # TODO(priya): decide, 0 = no expiry", "new": "  ticket_ttl_seconds: 150      # client SearchTimeout 120s + 30s allocation grace (SKY-2250)"}),
    ("r", "replaced 1 occurrence in services/matchmaker/config/matchmaker.yaml"),
    ("u", "and clean out the stale ones in prod, existing keys wont get the ttl"),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n mm exec deploy/matchmaker -- mmctl tickets purge --older-than 150s --yes"),
    ("r", """purged ranked: 1,904
purged casual: 2,452
purged custom: 298
total 4,654 tickets removed; 0 errors"""),
    *commit("matchmaker: expire tickets after client timeout + grace (SKY-2250)"),
    ("a", "Committed, and purged 4,654 stale tickets in prod. New tickets will expire on their own once this deploys."),
),

session(
    "ranked-gameserver-node-pool",
    ("u", "tomasz says tick jitter on ranked servers got way worse since the node pool change last sprint. p99 frame time 28ms vs our 16ms budget. what are they running on and what should it be"),
    run("""./scripts/promq 'avg by (node) (rate(node_cpu_steal_seconds_total{nodepool="gs-ranked"}[5m]))' --at '2024-10-15 20:00' | sort -k2 -nr | head -4"""),
    ("r", """gke-skyrift-prod-gs-ranked-81c0de-h4tz   0.091
gke-skyrift-prod-gs-ranked-3f1a2b-7xkq   0.078
gke-skyrift-prod-gs-ranked-81c0de-2lqp   0.066
gke-skyrift-prod-gs-ranked-3f1a2b-9mvd   0.061"""),
    read("infra/terraform/gke/nodepools.tf"),
    ("r", """resource "google_container_node_pool" "gs_ranked" {
  name     = "gs-ranked"
  cluster  = google_container_cluster.prod.id
  location = "us-central1"
  autoscaling {
    min_node_count = 4
    max_node_count = 80
  }
  node_config {
    machine_type = "e2-standard-8"  # SKY-2097: cost cut, was n2-standard-8
    image_type   = "COS_CONTAINERD"
    labels       = { workload = "gameserver", fleet = "ranked" }
    taint {
      key    = "agones.dev/gameserver"
      value  = "true"
      effect = "NO_EXECUTE"
    }
  }
}"""),
    ("a", "They're on e2-standard-8 since SKY-2097 (cost cut from n2-standard-8). E2 is shared-core-scheduled and we're seeing 6-9% CPU steal at peak; a 60Hz server sim loop is exactly the workload that suffers from that. Let me price the alternatives at our peak node count before recommending one."),
    run("./scripts/nodepool-cost.py --region us-central1 --nodes 52 --types e2-standard-8,n2-standard-8,n2d-standard-8,c2d-standard-8 --cud 1y"),
    ("r", """type              vCPU  mem_GB  on_demand_$/mo  1y_cud_$/mo  gs_per_node(ranked)  $/gs/mo(cud)
e2-standard-8     8     32      10,195          6,423        6                    20.59
n2-standard-8     8     32      14,760          9,299        6                    29.80
n2d-standard-8    8     32      12,842          8,090        6                    25.93
c2d-standard-8    8     32      15,502          9,766        7                    26.83
(52 nodes, 730h/mo, us-central1)"""),
    ("a", """Comparison at 52 nodes with the 1-year CUD:

1. e2-standard-8 is the cheapest but it's the cause: no steal guarantees, and the jitter Tomasz sees lines up with the steal peaks on h4tz and 7xkq.
2. n2-standard-8 is what we had before SKY-2097; it was fine for frame time but costs ~$29.80 per game server per month.
3. n2d-standard-8 (AMD Milan) is cheaper than n2 but has the same per-core clock as n2 in our benchmarks, so it buys us nothing on tick time.
4. The compute-optimized AMD type has the highest single-thread clock of the four, and in Tomasz's benchmark from last season it fits 7 ranked servers per node instead of 6 at the same frame budget, which brings the per-server cost down to $26.83, less than n2.

Recommendation: move the ranked fleet to a new pool on c2d-standard-8 (1y CUD), keep COS and the gameserver taint, then cordon and drain the e2 pool after the new one is warm."""),
    ("u", "go with that. new pool gs-ranked-c2d in terraform, we drain the old one tomorrow morning"),
    ("c", F, {"operation": "replace_string", "path": "infra/terraform/gke/nodepools.tf", "old": "resource \"google_container_node_pool\" \"gs_ranked\" {", "new": "resource \"google_container_node_pool\" \"gs_ranked_c2d\" {\n  name     = \"gs-ranked-c2d\"\n  cluster  = google_container_cluster.prod.id\n  location = \"us-central1\"\n  autoscaling {\n    min_node_count = 4\n    max_node_count = 80\n  }\n  node_config {\n    machine_type = \"c2d-standard-8\"  # tick jitter on e2 (CPU steal), 7 ranked gs/node\n    image_type   = \"COS_CONTAINERD\"\n    labels       = { workload = \"gameserver\", fleet = \"ranked\" }\n    taint {\n      key    = \"agones.dev/gameserver\"\n      value  = \"true\"\n      effect = \"NO_EXECUTE\"\n    }\n  }\n}\n\n# TODO: remove after drain\nresource \"google_container_node_pool\" \"gs_ranked\" {"}),
    ("r", "replaced 1 occurrence in infra/terraform/gke/nodepools.tf"),
    *commit("gke: add gs-ranked-c2d node pool for ranked game servers (tick jitter on e2)"),
    ("a", "Committed. Tonight run terraform plan/apply with -target=google_container_node_pool.gs_ranked_c2d so only the new pool is created, and we drain gs-ranked tomorrow morning."),
),

session(
    "gameserver-minidump-location",
    ("u", "where do the dedicated server crash dumps end up? tomasz needs the dump for the crash in match 7f3c9a1e from last night, SKY-2262"),
    read("deploy/agones/base/gameserver-template.yaml"),
    ("r", """template:
  spec:
    containers:
      - name: skyrift-server
        image: us-docker.pkg.dev/tfg-skyrift-prod/servers/skyrift-server:${BUILD}
        env:
          - name: SKY_MINIDUMP_DIR
            value: /var/skyrift/dumps
        volumeMounts:
          - name: dumps
            mountPath: /var/skyrift/dumps
      - name: dump-uploader
        image: us-docker.pkg.dev/tfg-skyrift-prod/tools/dump-uploader:1.6.2
        envFrom:
          - configMapRef:
              name: dump-uploader
        volumeMounts:
          - name: dumps
            mountPath: /dumps
            readOnly: true
    volumes:
      - name: dumps
        emptyDir: {}"""),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n gameservers get configmap dump-uploader -o yaml"),
    ("r", """apiVersion: v1
data:
  UPLOAD_BUCKET: gs://tfg-skyrift-minidumps-prod
  UPLOAD_PREFIX: "{fleet}/{build}/{date}/{match_id}/"
  WATCH_DIR: /dumps
  DELETE_AFTER_UPLOAD: "true"
  INCLUDE_SERVER_LOG_TAIL: "2000"
kind: ConfigMap
metadata:
  name: dump-uploader
  namespace: gameservers"""),
    ("a", "The server writes minidumps to /var/skyrift/dumps (an emptyDir), and the dump-uploader sidecar ships them to the GCS bucket in that configmap, laid out as fleet/build/date/match_id. Let me find that match."),
    run("gsutil ls -r 'gs://tfg-skyrift-minidumps-prod/ranked-s4/*/2024-10-16/7f3c9a1e/'"),
    ("r", """gs://tfg-skyrift-minidumps-prod/ranked-s4/4.12.0-41203/2024-10-16/7f3c9a1e/:
gs://tfg-skyrift-minidumps-prod/ranked-s4/4.12.0-41203/2024-10-16/7f3c9a1e/server.dmp
gs://tfg-skyrift-minidumps-prod/ranked-s4/4.12.0-41203/2024-10-16/7f3c9a1e/server.log.tail"""),
    run("gsutil cp gs://tfg-skyrift-minidumps-prod/ranked-s4/4.12.0-41203/2024-10-16/7f3c9a1e/server.dmp /tmp/7f3c.dmp && minidump_stackwalk /tmp/7f3c.dmp /srv/symbols/skyrift-server/4.12.0-41203 2>/dev/null | sed -n '1,14p'"),
    ("r", """Operating system: Linux 0.0.0 Linux 6.1.85+ #1 SMP x86_64
CPU: amd64 8 CPUs
Crash reason:  SIGSEGV /SEGV_MAPERR
Crash address: 0x0000000000000040

Thread 3 (crashed)
 0  skyrift-server!sky::net::ReplicationGraph::RemoveActor(sky::Actor*) [ReplicationGraph.cpp : 412 + 0x8]
 1  skyrift-server!sky::game::Match::DespawnPlayer(sky::PlayerId) [Match.cpp : 1187 + 0x12]
 2  skyrift-server!sky::game::Match::OnPlayerDisconnected(sky::PlayerId, sky::net::DisconnectReason) [Match.cpp : 962 + 0x1a]
 3  skyrift-server!sky::net::ConnectionManager::Tick(double) [ConnectionManager.cpp : 318 + 0x9]
 4  skyrift-server!sky::ServerLoop::RunFrame() [ServerLoop.cpp : 144 + 0x5]"""),
    ("a", "Crash is a null deref in ReplicationGraph::RemoveActor (offset 0x40) when a player disconnects during DespawnPlayer, i.e. the actor was already removed once. Looks like a double despawn when the disconnect lands in the same frame as a round end; Tomasz will know the Match.cpp side. The log tail next to the dump should show the disconnect reason."),
    ("u", "nice. give me the full gs path so i can paste it in the ticket"),
    ("a", "gs://tfg-skyrift-minidumps-prod/ranked-s4/4.12.0-41203/2024-10-16/7f3c9a1e/server.dmp (and server.log.tail in the same folder). Symbols for that build are in /srv/symbols/skyrift-server/4.12.0-41203."),
),

session(
    "apple-server-notifications-url",
    ("u", "apple server notifications arent arriving in prod since the domain move last week. refunds are not revoking items. SKY-2279"),
    run("curl -s -o /dev/null -w '%{http_code} %{redirect_url}\\n' -X POST https://store.skyrift-game.com/apple/asn/v2"),
    ("r", "301 https://receipts.skyrift.tidewaterforge.io/apple/asn/v2"),
    ("a", "The old host now answers with a 301 to the new domain, and Apple's notification sender doesn't follow redirects: it counts a 3xx as a failed delivery and retries on its backoff schedule, then gives up. App Store Connect still has the old URL configured, so REFUND notifications never reach the handler. The URL in App Store Connect needs to be changed to the new host directly."),
    ("u", "ok i have app store connect open (app information > app store server notifications). what exactly do i paste for production"),
    ("a", "Production Server URL: https://receipts.skyrift.tidewaterforge.io/apple/asn/v2 and set the version to Version 2 Notifications. The path has to stay /apple/asn/v2, that's the route the receipts service serves."),
    ("u", "saved. how do we check it works"),
    run("./scripts/asc-api.sh POST /inApps/v1/notifications/test --env production"),
    ("r", """{"testNotificationToken":"b7e0c1d2-5f3a-4e8b-9a61-0c2f7d4e3b10_1729154210412"}"""),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n store logs deploy/receipts --since=3m | grep asn"),
    ("r", """level=info msg="asn v2 received" notificationType=TEST notificationUUID=6f1d0a7e-2b44-4f1c-8a3e-91c0d5b7e2aa env=Production
level=info msg="asn v2 verified" signer="Apple Inc." chain_ok=true"""),
    ("c", F, {"operation": "replace_string", "path": "docs/store/apple.md", "old": "## App Store Server Notifications\n", "new": "## App Store Server Notifications\n\nApp Store Connect > App Information > App Store Server Notifications:\n- Production Server URL: https://receipts.skyrift.tidewaterforge.io/apple/asn/v2 (Version 2)\n- Apple does not follow redirects. If the receipts domain changes, update this URL the same day (SKY-2279).\n- Verify with scripts/asc-api.sh POST /inApps/v1/notifications/test and look for notificationType=TEST in the receipts logs.\n"}),
    ("r", "replaced 1 occurrence in docs/store/apple.md"),
    *commit("docs(store): record App Store Server Notifications URL (SKY-2279)"),
    ("a", "Test notification arrived and the signature chain verified, so Apple is delivering to the new URL. I also recorded the setting in docs/store/apple.md and committed it. Refunds from the last week will not be resent automatically; we can pull them with the Get Notification History API for the gap and replay them."),
),
]

# ---------------------------------------------------------------- OTHER sessions (1/3)

L_OTHER += [
session(
    "staging-fleets-scale-down",
    ("u", "keiko says the staging cluster bill is silly for a cluster nobody plays on at night. scale the staging fleets down, they dont need big buffers"),
    run("grep -n -A3 'buffer:' deploy/agones/staging/*-autoscaler.yaml"),
    ("r", """deploy/agones/staging/casual-s4-autoscaler.yaml:12:    buffer:
deploy/agones/staging/casual-s4-autoscaler.yaml-13-      bufferSize: 8
deploy/agones/staging/casual-s4-autoscaler.yaml-14-      minReplicas: 8
deploy/agones/staging/casual-s4-autoscaler.yaml-15-      maxReplicas: 60
--
deploy/agones/staging/ranked-s4-autoscaler.yaml:12:    buffer:
deploy/agones/staging/ranked-s4-autoscaler.yaml-13-      bufferSize: 10
deploy/agones/staging/ranked-s4-autoscaler.yaml-14-      minReplicas: 10
deploy/agones/staging/ranked-s4-autoscaler.yaml-15-      maxReplicas: 80"""),
    run("""./scripts/promq 'max_over_time(sum by (fleet_name) (agones_gameservers_count{type="Allocated",cluster="skyrift-staging"})[7d:5m])'"""),
    ("r", """fleet_name    value
casual-s4     6
ranked-s4     9
custom-lobby  4"""),
    ("a", "Staging peaks at 9 allocated ranked and 6 casual servers over the last week (that's the QA runs plus the nightly bot matches). Buffers of 10 and 8 with the same minReplicas mean we keep ~18 idle servers around all night. I'd go to bufferSize 3 / minReplicas 2 for ranked and bufferSize 2 / minReplicas 2 for casual; a cold start is ~80s, which is fine for QA. The k6 soak runs would need a temporary bump, I'll note that in the file."),
    ("u", "ok"),
    ("c", F, {"operation": "replace_string", "path": "deploy/agones/staging/ranked-s4-autoscaler.yaml", "old": "      bufferSize: 10\n      minReplicas: 10", "new": "      bufferSize: 3   # raise temporarily for load tests\n      minReplicas: 2"}),
    ("r", "replaced 1 occurrence in deploy/agones/staging/ranked-s4-autoscaler.yaml"),
    ("c", F, {"operation": "replace_string", "path": "deploy/agones/staging/casual-s4-autoscaler.yaml", "old": "      bufferSize: 8\n      minReplicas: 8", "new": "      bufferSize: 2   # raise temporarily for load tests\n      minReplicas: 2"}),
    ("r", "replaced 1 occurrence in deploy/agones/staging/casual-s4-autoscaler.yaml"),
    run("kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging apply -k deploy/agones/staging && kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n gameservers get fleet"),
    ("r", """fleet.agones.dev/casual-s4 unchanged
fleet.agones.dev/custom-lobby unchanged
fleet.agones.dev/ranked-s4 unchanged
fleetautoscaler.autoscaling.agones.dev/casual-s4-autoscaler configured
fleetautoscaler.autoscaling.agones.dev/ranked-s4-autoscaler configured
NAME           SCHEDULING   DESIRED   CURRENT   ALLOCATED   READY   AGE
casual-s4      Packed       4         9         2           7       19d
custom-lobby   Packed       4         4         0           4       41d
ranked-s4      Packed       5         12        2           10      19d"""),
    *commit("agones(staging): shrink ranked/casual buffers, staging peaks at 9 allocated"),
    ("a", "Applied and committed. The fleets are scaling down (desired 4 casual / 5 ranked, current still draining ready servers); should settle in a couple of minutes."),
),

session(
    "apple-api-client-timeouts",
    ("u", "receipts pods piled up goroutines yesterday when apple's api was slow. verify calls have no timeout?? SKY-2266"),
    read("services/receipts/internal/apple/client.go"),
    ("r", """package apple

const (
	prodBaseURL    = "https://api.storekit.itunes.apple.com"
	sandboxBaseURL = "https://api.storekit-sandbox.itunes.apple.com"
)

type Client struct {
	http    *http.Client
	signer  *jwtSigner
	baseURL string
}

func New(env string, signer *jwtSigner) *Client {
	base := prodBaseURL
	if env != "production" {
		base = sandboxBaseURL
	}
	return &Client{http: &http.Client{}, signer: signer, baseURL: base}
}

func (c *Client) GetTransaction(ctx context.Context, txID string) (*JWSTransaction, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/inApps/v1/transactions/"+txID, nil)
	req.Header.Set("Authorization", "Bearer "+c.signer.Token())
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return decodeTransaction(resp)
}"""),
    ("a", "Right, it's a zero-value http.Client (no timeout) and callers pass the request context, which for the verify endpoint is the client's HTTP request with no deadline. When Apple stalls, every verify holds a goroutine and a connection until the player gives up. I'll add a client timeout of 8s, a transport with bounded idle connections, and one retry on 5xx/429 with jittered backoff, honouring Retry-After."),
    ("c", F, {"operation": "replace_string", "path": "services/receipts/internal/apple/client.go", "old": "\treturn &Client{http: &http.Client{}, signer: signer, baseURL: base}", "new": "\treturn &Client{\n\t\thttp: &http.Client{\n\t\t\tTimeout: 8 * time.Second,\n\t\t\tTransport: &http.Transport{\n\t\t\t\tMaxIdleConnsPerHost: 32,\n\t\t\t\tIdleConnTimeout:     90 * time.Second,\n\t\t\t\tTLSHandshakeTimeout: 3 * time.Second,\n\t\t\t},\n\t\t},\n\t\tsigner:  signer,\n\t\tbaseURL: base,\n\t}"}),
    ("r", "replaced 1 occurrence in services/receipts/internal/apple/client.go"),
    ("c", F, {"operation": "replace_string", "path": "services/receipts/internal/apple/client.go", "old": "\tresp, err := c.http.Do(req)\n\tif err != nil {\n\t\treturn nil, err\n\t}", "new": "\tresp, err := doWithRetry(c.http, req, 1)\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"apple get transaction %s: %w\", txID, err)\n\t}"}),
    ("r", "replaced 1 occurrence in services/receipts/internal/apple/client.go"),
    ("u", "8s is fine, unity waits 15s for verify. but make the timeout an option, i dont want a unit test sleeping 8s"),
    ("c", F, {"operation": "replace_string", "path": "services/receipts/internal/apple/client_test.go", "old": "\tc := New(\"sandbox\", testSigner(t))\n\tc.baseURL = stall.URL", "new": "\tc := New(\"sandbox\", testSigner(t), WithTimeout(200*time.Millisecond))\n\tc.baseURL = stall.URL"}),
    ("r", "replaced 1 occurrence in services/receipts/internal/apple/client_test.go"),
    run("go test ./services/receipts/... -count=1"),
    ("r", """ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/apple	1.533s
ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/play	3.087s
ok  	github.com/tidewaterforge/skyrift/services/receipts/cmd/receipts	0.211s"""),
    *commit("receipts(apple): 8s client timeout, one retry on 5xx/429 (SKY-2266)"),
    ("a", "Committed. Apple calls now time out after 8s (configurable via WithTimeout) and retry once on 5xx/429."),
),

session(
    "anticheat-bridge-rate-limit",
    ("u", """anticheat-bridge is spamming 429s from vantaguard since the ban wave job started:
level=warn msg="report failed" player=p_51822 status=429 body="{\\"error\\":\\"rate_limited\\",\\"retry_after_ms\\":800}"
do they have a documented limit?"""),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n anticheat exec deploy/anticheat-bridge -- curl -s -D - -o /dev/null -H \"Authorization: Bearer $VG_API_TOKEN\" https://api.vantaguard.example/v3/reports/ping"),
    ("r", """HTTP/2 200
content-type: application/json
x-ratelimit-limit: 50
x-ratelimit-burst: 100
x-ratelimit-remaining: 12
x-ratelimit-scope: api-key
x-request-id: 0c91d7a2b4e3"""),
    read("docs/vendors/vantaguard-api.md"),
    ("r", """# VantaGuard server API (v3)

Base URL: https://api.vantaguard.example/v3
Auth: bearer token per environment (anticheat-bridge reads it from the VG_API_TOKEN secret)

Limits: 50 requests/s per API key, bursts up to 100. Over the limit returns 429 with
retry_after_ms. Batch endpoint POST /reports:batch accepts up to 200 reports per call and
counts as one request.

Endpoints used by us: /reports, /reports:batch, /sessions/attest, /bans/{player}/appeal"""),
    ("a", "Their limit is 50 req/s per API key with bursts to 100 (the headers confirm it, scope api-key). The ban wave job is calling POST /reports once per player, thousands in a loop. Two fixes: use /reports:batch (200 per call, counts as one request) for the wave job, and put a client-side token bucket at 40/s, burst 80 in the bridge so the interactive reports never hit 429 again."),
    ("u", "do both. keep some headroom for the live reports from game servers"),
    ("c", F, {"operation": "replace_string", "path": "services/anticheat-bridge/vgclient/client.go", "old": "type Client struct {\n\thttp  *http.Client\n\tbase  string\n\ttoken string\n}\n\nfunc (c *Client) Report(ctx context.Context, r Report) error {\n\treturn c.post(ctx, \"/reports\", r)\n}", "new": "type Client struct {\n\thttp    *http.Client\n\tbase    string\n\ttoken   string\n\tlimiter *rate.Limiter // VantaGuard allows 50/s per key, burst 100; we stay at 40/80\n}\n\nfunc (c *Client) Report(ctx context.Context, r Report) error {\n\tif err := c.limiter.Wait(ctx); err != nil {\n\t\treturn err\n\t}\n\treturn c.post(ctx, \"/reports\", r)\n}\n\n// ReportBatch sends up to 200 reports in one request (counts as one request against the limit).\nfunc (c *Client) ReportBatch(ctx context.Context, rs []Report) error {\n\tfor len(rs) > 0 {\n\t\tn := min(len(rs), 200)\n\t\tif err := c.limiter.Wait(ctx); err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif err := c.post(ctx, \"/reports:batch\", map[string]any{\"reports\": rs[:n]}); err != nil {\n\t\t\treturn err\n\t\t}\n\t\trs = rs[n:]\n\t}\n\treturn nil\n}"}),
    ("r", "replaced 1 occurrence in services/anticheat-bridge/vgclient/client.go"),
    run("go test ./services/anticheat-bridge/... -count=1"),
    ("r", """ok  	github.com/tidewaterforge/skyrift/services/anticheat-bridge/vgclient	0.644s
ok  	github.com/tidewaterforge/skyrift/services/anticheat-bridge/banwave	1.208s"""),
    ("c", F, {"operation": "replace_string", "path": "services/anticheat-bridge/banwave/job.go", "old": "\tfor _, r := range reports {\n\t\tif err := j.vg.Report(ctx, r); err != nil {\n\t\t\tj.log.Warn(\"report failed\", \"player\", r.PlayerID, \"err\", err)\n\t\t}\n\t}", "new": "\tif err := j.vg.ReportBatch(ctx, reports); err != nil {\n\t\treturn fmt.Errorf(\"ban wave batch report: %w\", err)\n\t}"}),
    ("r", "replaced 1 occurrence in services/anticheat-bridge/banwave/job.go"),
    *commit("anticheat-bridge: rate limit VantaGuard calls, batch ban-wave reports"),
    ("a", "Committed. Ban wave now sends batches of 200, and all calls go through a 40/s (burst 80) limiter, leaving ~10/s of headroom under VantaGuard's per-key limit."),
),

session(
    "jenkins-mac-agents-xcode",
    ("u", """ios build broke on mac-agent-03 and -05 only, others fine:
ld: warning: ignoring duplicate libraries: '-lc++'
0  0x1045a2f1c  ld  ld-prime::Atom::finalAddress
ld: Assertion failed: (fixup.target.isStatic()), function ...
clang: error: linker command failed with exit code 1
wtf"""),
    run("for a in 01 02 03 04 05 06 07; do echo -n \"mac-agent-$a \"; ssh jenkins@mac-agent-$a 'xcodebuild -version | head -1'; done"),
    ("r", """mac-agent-01 Xcode 15.2
mac-agent-02 Xcode 15.2
mac-agent-03 Xcode 15.3
mac-agent-04 Xcode 15.2
mac-agent-05 Xcode 15.3
mac-agent-06 Xcode 15.2
mac-agent-07 Xcode 15.2"""),
    ("a", "03 and 05 picked up Xcode 15.3 (looks like macOS auto-update on those two). 15.3's new linker (ld-prime) asserts on the IL2CPP static lib the Unity export produces; 15.2 still uses the classic path by default. Options: pin all agents to 15.2, or keep 15.3 and pass -ld_classic in the Unity post-process. Pinning is safer until we've tested 15.3 properly."),
    ("u", "pin everything to 15.2 and stop the auto updates. and make the pipeline fail fast if the version is wrong"),
    run("for a in 03 05; do ssh jenkins@mac-agent-$a 'xcodes select 15.2 && sudo softwareupdate --schedule off && sudo defaults write /Library/Preferences/com.apple.SoftwareUpdate AutomaticallyInstallAppUpdates -bool false && xcodebuild -version | head -1'; done"),
    ("r", """Selected /Applications/Xcode-15.2.0.app
Automatic checking for updates is turned off.
Xcode 15.2
Selected /Applications/Xcode-15.2.0.app
Automatic checking for updates is turned off.
Xcode 15.2"""),
    ("c", F, {"operation": "replace_string", "path": "ci/agents/mac/provision.sh", "old": "xcodes select 15.2\n", "new": "xcodes select 15.2\n# Xcode 15.3 ld-prime asserts on IL2CPP static libs; keep 15.2 and no auto updates\nsudo softwareupdate --schedule off\nsudo defaults write /Library/Preferences/com.apple.SoftwareUpdate AutomaticallyInstallAppUpdates -bool false\n"}),
    ("r", "replaced 1 occurrence in ci/agents/mac/provision.sh"),
    ("c", F, {"operation": "replace_string", "path": "ci/Jenkinsfile.ios", "old": "  stages {\n", "new": "  stages {\n    stage('Toolchain check') {\n      steps { sh 'test \"$(xcodebuild -version | head -1)\" = \"Xcode 15.2\" || { echo \"agent $NODE_NAME has wrong Xcode\"; exit 1; }' }\n    }\n"}),
    ("r", "replaced 1 occurrence in ci/Jenkinsfile.ios"),
    run("curl -s -X POST -u ci-bot:$JENKINS_TOKEN 'https://jenkins.tidewaterforge.io/job/mobile/job/ios-release/buildWithParameters?BRANCH=main&AGENT=mac-agent-03' && sleep 1400 && curl -s -u ci-bot:$JENKINS_TOKEN https://jenkins.tidewaterforge.io/job/mobile/job/ios-release/lastBuild/consoleText | grep -E 'Toolchain|ARCHIVE|Finished'"),
    ("r", """[Pipeline] { (Toolchain check)
** ARCHIVE SUCCEEDED **
Finished: SUCCESS"""),
    *commit("ci(mac): pin Xcode 15.2, disable auto updates, fail fast on wrong Xcode"),
    ("a", "Green on mac-agent-03. Committed the provisioning change and the toolchain check stage."),
),

session(
    "staging-redis-eviction-policy",
    ("u", "qa says matchmaking tickets in staging randomly vanish mid search during the bot runs. 'ticket not found' on GetTicket. redis issue?"),
    run("kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm exec deploy/matchmaker -- mmctl store info"),
    ("r", """store: redis (memorystore mm-tickets-staging)
redis_version: 7.0.15
used_memory_human: 4.61G
maxmemory_human: 4.00G
maxmemory_policy: allkeys-lru
evicted_keys: 218,402
expired_keys: 1,904,311
keyspace: db0 keys=3,118,922 expires=3,117,004"""),
    run("kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm exec deploy/matchmaker -- mmctl store keys --sample 20000 --group-by prefix"),
    ("r", """prefix            sampled   est_total    avg_size
botidx:           19,211    2,996,400    1.4 KB
ticket:           612       95,450       0.9 KB
pool:             151       23,550       0.3 KB
backfill:         26        4,050        0.5 KB"""),
    ("a", "That's eviction: maxmemory_policy is allkeys-lru and the instance is over its limit, so Redis evicts live tickets (218k evicted keys). And what fills it: ~3M botidx: keys from the bot harness (1.4 KB each, ~4 GB) are crowding out the tickets. Two changes: set maxmemory-policy to noeviction on the ticket store (a matchmaker should fail loudly on OOM rather than silently drop tickets), and give the bot index keys a TTL in the harness."),
    run("gcloud redis instances update mm-tickets-staging --region us-central1 --project tfg-skyrift-staging --update-redis-config maxmemory-policy=noeviction && gcloud redis instances describe mm-tickets-staging --region us-central1 --project tfg-skyrift-staging --format='yaml(redisConfigs,memorySizeGb)'"),
    ("r", """Request issued for: [mm-tickets-staging]
Waiting for operation [projects/tfg-skyrift-staging/locations/us-central1/operations/operation-1729080412-61f0a] to complete...done.
memorySizeGb: 5
redisConfigs:
  maxmemory-policy: noeviction"""),
    ("c", F, {"operation": "replace_string", "path": "tools/botharness/index.go", "old": "\treturn x.rdb.Set(ctx, \"botidx:\"+b.ID, b.Marshal(), 0).Err()", "new": "\t// bots only live for one run; never let the index grow unbounded in the ticket store\n\treturn x.rdb.Set(ctx, \"botidx:\"+b.ID, b.Marshal(), 6*time.Hour).Err()"}),
    ("r", "replaced 1 occurrence in tools/botharness/index.go"),
    run("kubectl --context gke_tfg-skyrift-staging_us-central1_skyrift-staging -n mm exec deploy/matchmaker -- mmctl store purge-prefix botidx: --yes"),
    ("r", "deleted 2,996,118 keys with prefix botidx: in 41.2s"),
    ("u", "looks good, commit it. and tell hannah bot runs might OOM now instead of silently losing tickets"),
    *commit("botharness: 6h TTL on bot index keys; staging ticket store now noeviction"),
    ("a", "Committed. Message for Hannah: \"Staging ticket Redis is now noeviction (5 GB). If a bot run fills it, matchmaker writes will fail with OOM errors instead of tickets silently vanishing; bot index keys now expire after 6h, and I purged the ~3M old ones.\""),
),

session(
    "android-gradle-oom-ci",
    ("u", """android-release on jenkins died again at the gradle step:
> Task :launcher:mergeReleaseNativeLibs
Expiring Daemon because JVM heap space is exhausted
FAILURE: Build failed with an exception.
* What went wrong:
Execution failed for task ':unityLibrary:compileReleaseJavaWithJavac'.
> java.lang.OutOfMemoryError: Java heap space"""),
    read("Assets/Plugins/Android/gradleTemplate.properties"),
    ("r", """org.gradle.jvmargs=-Xmx4096M
org.gradle.parallel=true
android.useAndroidX=true
android.enableJetifier=true
unityStreamingAssets=**STREAMING_ASSETS**
**ADDITIONAL_PROPERTIES**"""),
    ("a", "The Gradle daemon is capped at 4 GB heap and the unityLibrary javac step blows through it since the Firebase 11.9 upgrade added more AARs to jetify. The agents have 62 GB, so raising it is safe: I'd set -Xmx6g with a 1g metaspace cap and turn off Jetifier's parallel overhead only if that's not enough."),
    ("u", "do 6g"),
    ("c", F, {"operation": "replace_string", "path": "Assets/Plugins/Android/gradleTemplate.properties", "old": "org.gradle.jvmargs=-Xmx4096M", "new": "org.gradle.jvmargs=-Xmx6g -XX:MaxMetaspaceSize=1g -Dfile.encoding=UTF-8"}),
    ("r", "replaced 1 occurrence in Assets/Plugins/Android/gradleTemplate.properties"),
    run("curl -s -X POST -u ci-bot:$JENKINS_TOKEN 'https://jenkins.tidewaterforge.io/job/mobile/job/android-release/buildWithParameters?BRANCH=fix/gradle-heap' && sleep 1300 && curl -s -u ci-bot:$JENKINS_TOKEN https://jenkins.tidewaterforge.io/job/mobile/job/android-release/lastBuild/consoleText | grep -E 'BUILD|Task :launcher:bundleRelease|Finished'"),
    ("r", """> Task :launcher:bundleRelease
BUILD SUCCESSFUL in 14m 22s
Finished: SUCCESS"""),
    ("u", "ok that worked, thanks. commit it. why did the daemon get 4g in the first place tho"),
    run("git log --oneline -3 -- Assets/Plugins/Android/gradleTemplate.properties"),
    ("r", """7a2c9e1 android: enable jetifier for Firebase 11.x
3be10f4 android: gradle heap 4g (agents had 16 GB back then)
11d0aa8 android: custom gradle template"""),
    ("a", "It was set when the Linux agents had 16 GB (3be10f4); they were rebuilt with 62 GB in the spring but nobody revisited it. 6g leaves plenty for two concurrent executors per agent."),
    *commit("android: gradle daemon heap 6g, OOM in unityLibrary javac after Firebase 11.9"),
    ("a", "Committed."),
),
]

# ---------------------------------------------------------------- OTHER sessions (2/3)

L_OTHER += [
session(
    "k6-inventory-spike-test",
    ("u", "store sale next week (SKY-2291). want a spike test on inventory: grant + read wallet, ramp hard like a push notification hitting everyone at once. staging"),
    read("loadtest/k6/inventory_spike.js"),
    ("r", """import http from 'k6/http';
import { check } from 'k6';
import { login } from './lib/auth.js';

export const options = { vus: 200, duration: '2m' };

export default function () {
  const tok = login(__ENV.TARGET);
  const r = http.get(`https://inventory.${__ENV.TARGET}.skyrift.tidewaterforge.io/v1/wallet`, { headers: { Authorization: `Bearer ${tok}` } });
  check(r, { 'wallet 200': (x) => x.status === 200 });
}"""),
    ("a", "The existing script is a flat 200 VUs for 2 minutes and only reads the wallet. For a push-notification spike I'd use ramping-arrival-rate so the request rate is what we control: warm at 50 it/s, jump to 1500 it/s in 30s, hold 10 minutes, drop. Each iteration does a wallet read plus a sale-item grant on a test SKU. Thresholds: p95 under 300ms and under 1% errors, so the run fails itself if we regress."),
    ("u", "yes but keep a simple vus/duration variant too, hannah likes to run that from the cli"),
    ("c", F, {"operation": "replace_string", "path": "loadtest/k6/inventory_spike.js", "old": "export const options = { vus: 200, duration: '2m' };\n\nexport default function () {\n  const tok = login(__ENV.TARGET);\n  const r = http.get(`https://inventory.${__ENV.TARGET}.skyrift.tidewaterforge.io/v1/wallet`, { headers: { Authorization: `Bearer ${tok}` } });\n  check(r, { 'wallet 200': (x) => x.status === 200 });\n}", "new": "const BASE = `https://inventory.${__ENV.TARGET}.skyrift.tidewaterforge.io`;\n\nexport const options = __ENV.SIMPLE ? {} : {\n  scenarios: {\n    spike: {\n      executor: 'ramping-arrival-rate', startRate: 50, timeUnit: '1s',\n      preAllocatedVUs: 800, maxVUs: 2500,\n      stages: [ { target: 50, duration: '1m' }, { target: 1500, duration: '30s' },\n                { target: 1500, duration: '10m' }, { target: 0, duration: '1m' } ],\n    },\n  },\n  thresholds: { http_req_duration: ['p(95)<300'], http_req_failed: ['rate<0.01'] },\n};\n\nexport default function () {\n  const tok = login(__ENV.TARGET);\n  const h = { headers: { Authorization: `Bearer ${tok}`, 'Content-Type': 'application/json' } };\n  check(http.get(`${BASE}/v1/wallet`, h), { 'wallet 200': (x) => x.status === 200 });\n  check(http.post(`${BASE}/v1/grants:test`, JSON.stringify({ sku: 'loadtest_sale_bundle' }), h), { 'grant 200': (x) => x.status === 200 });\n}"}),
    ("r", "replaced 1 occurrence in loadtest/k6/inventory_spike.js"),
    run("k6 run --vus 1500 --duration 10m -e SIMPLE=1 -e TARGET=staging loadtest/k6/inventory_spike.js 2>&1 | tail -12"),
    ("r", """     checks.........................: 97.82% 1421930 out of 1453611
     http_req_duration..............: avg=212.4ms min=9.1ms med=141.2ms max=12.02s p(90)=388.5ms p(95)=611.9ms
       { expected_response:true }...: avg=180.9ms min=9.1ms med=139.7ms max=4.81s  p(90)=352.2ms p(95)=540.3ms
     http_req_failed................: 2.17%  31681 out of 1453611
     http_reqs......................: 1453611 2421.9/s
     vus............................: 1500   min=1500 max=1500

running (10m00.2s), 0000/1500 VUs, 726805 complete and 0 interrupted iterations
default OK [======================================] 1500 VUs  10m0s"""),
    ("a", """The simple variant at 1500 VUs / 10m already shows trouble: p95 612ms and 2.17% failures. Breaking down the failures by endpoint, nearly all are the grant POST returning 503 from the inventory pods, with Spanner "Transaction was aborted" retries in their logs. Likely the same wallet-row contention we saw during the gems sale; staging Spanner is only 1 node though, so I wouldn't extrapolate the absolute numbers to prod."""),
    ("u", "ok. commit the script, ill get keiko to bump staging spanner for a real run"),
    ("c", F, {"operation": "replace_string", "path": "loadtest/Makefile", "old": "inventory-spike:\n\tk6 run -e TARGET=staging k6/inventory_spike.js", "new": "inventory-spike:\n\tk6 run -e TARGET=staging k6/inventory_spike.js\n\n# quick CLI variant (Hannah): fixed VUs, no thresholds\ninventory-spike-simple:\n\tk6 run --vus 1500 --duration 10m -e SIMPLE=1 -e TARGET=staging k6/inventory_spike.js"}),
    ("r", "replaced 1 occurrence in loadtest/Makefile"),
    *commit("loadtest: inventory spike scenario with arrival-rate ramp + simple variant (SKY-2291)"),
    ("a", "Committed. `make -C loadtest inventory-spike` runs the ramp with thresholds, `inventory-spike-simple` the fixed-VU version."),
),

session(
    "remote-config-daily-deal-param",
    ("u", "rafael wants a new remote config param for the number of daily deal slots in the store, default 3, and 4 for players in the 'whales_t2' audience. client + template"),
    read("liveops/remote-config/template.prod.json"),
    ("r", """{
  "conditions": [
    { "name": "whales_t2", "expression": "app.userProperty['spend_tier'] >= 2", "tagColor": "GREEN" },
    { "name": "ios_only", "expression": "device.os == 'ios'", "tagColor": "BLUE" }
  ],
  "parameters": {
    "xp_multiplier_weekend": { "defaultValue": { "value": "1.0" }, "valueType": "NUMBER" },
    "store_featured_bundle": { "defaultValue": { "value": "starter_pack_s4" }, "valueType": "STRING" },
    "ranked_enabled": { "defaultValue": { "value": "true" }, "valueType": "BOOLEAN" }
  },
  "version": { "versionNumber": "212" }
}"""),
    ("c", F, {"operation": "replace_string", "path": "liveops/remote-config/template.prod.json", "old": "    \"ranked_enabled\": { \"defaultValue\": { \"value\": \"true\" }, \"valueType\": \"BOOLEAN\" }\n", "new": "    \"ranked_enabled\": { \"defaultValue\": { \"value\": \"true\" }, \"valueType\": \"BOOLEAN\" },\n    \"store_daily_deal_slots\": {\n      \"defaultValue\": { \"value\": \"3\" },\n      \"conditionalValues\": { \"whales_t2\": { \"value\": \"4\" } },\n      \"valueType\": \"NUMBER\",\n      \"description\": \"Daily deal slots in the store (Rafael). Client clamps to 1..6.\"\n    }\n"}),
    ("r", "replaced 1 occurrence in liveops/remote-config/template.prod.json"),
    ("c", F, {"operation": "replace_string", "path": "client/Assets/Scripts/LiveOps/RemoteConfigDefaults.cs", "old": "        { \"ranked_enabled\", true },\n", "new": "        { \"ranked_enabled\", true },\n        { \"store_daily_deal_slots\", 3 },\n"}),
    ("r", "replaced 1 occurrence in client/Assets/Scripts/LiveOps/RemoteConfigDefaults.cs"),
    ("a", "Template and client defaults done. In the store screen I'll read it with Mathf.Clamp(value, 1, 6), since a bad value from the console (like the 10x xp one) shouldn't be able to render 40 empty deal cards."),
    ("c", F, {"operation": "replace_string", "path": "client/Assets/Scripts/Store/DailyDealsPanel.cs", "old": "        var slots = 3;", "new": "        var slots = Mathf.Clamp((int)RemoteConfig.GetLong(\"store_daily_deal_slots\"), 1, 6);"}),
    ("r", "replaced 1 occurrence in client/Assets/Scripts/Store/DailyDealsPanel.cs"),
    ("u", "publish to staging so qa can check it. prod goes with rafael's next publish"),
    run("go run ./tools/rcpublish -env staging -file liveops/remote-config/template.prod.json"),
    ("r", """validate: 4 parameters, 2 conditions ... ok
published staging version 199 (etag etag-8b1f0c27a4)"""),
    *commit("liveops: store_daily_deal_slots param (3, whales_t2: 4) + client clamp"),
    ("a", "Published to staging as version 199 and committed. Prod will go out with Rafael's next publish; he'll need the two approvals as usual."),
),

session(
    "matchmaker-mmr-widening",
    ("u", "ranked queue times at high mmr are awful, p95 over 2 min for 2400+. can we widen the mmr window earlier? whats it now"),
    run("sed -n '/^mmr:/,/^[a-z]/p' services/matchmaker/config/matchmaker.yaml"),
    ("r", """mmr:
  initial_window: 100
  widen_after_seconds: 20
  widen_step: 50
  widen_every_seconds: 10
  max_window: 600
  high_mmr_threshold: 2400
assignment:"""),
    run("""./scripts/promq 'histogram_quantile(0.95, sum by (le, mmr_band) (rate(mm_time_to_match_seconds_bucket{pool="ranked"}[1d])))'"""),
    ("r", """mmr_band     value
0-1200       14.2
1200-1800    21.7
1800-2400    48.3
2400+        131.6"""),
    ("a", """For 2400+ the population is thin, so a 100 window that starts widening only after 20s and grows by 50 every 10s takes ~110s to reach 600. Two options:
1. Widen everyone earlier: cheap, but the 0-1800 bands are fine and would get worse match quality for no reason.
2. Band-specific rule for high MMR: start at 200, widen after 10s by 100 every 5s, cap at 800. That reaches the cap in ~40s.
I'd do 2."""),
    ("u", "2. but cap at 700, tomasz worries about stomps"),
    ("c", F, {"operation": "replace_string", "path": "services/matchmaker/config/matchmaker.yaml", "old": "  high_mmr_threshold: 2400\n", "new": "  high_mmr_threshold: 2400\n  high_mmr:\n    initial_window: 200\n    widen_after_seconds: 10\n    widen_step: 100\n    widen_every_seconds: 5\n    max_window: 700\n"}),
    ("r", "replaced 1 occurrence in services/matchmaker/config/matchmaker.yaml"),
    ("c", F, {"operation": "replace_string", "path": "services/matchmaker/director/window.go", "old": "func windowFor(cfg MMRConfig, mmr int, waited time.Duration) int {\n\tw := cfg.InitialWindow", "new": "func windowFor(cfg MMRConfig, mmr int, waited time.Duration) int {\n\tif mmr >= cfg.HighMMRThreshold && cfg.HighMMR != nil {\n\t\tcfg = *cfg.HighMMR\n\t}\n\tw := cfg.InitialWindow"}),
    ("r", "replaced 1 occurrence in services/matchmaker/director/window.go"),
    run("go test ./services/matchmaker/director/ -run Window -count=1 -v 2>&1 | tail -8"),
    ("r", """--- PASS: TestWindowFor (0.00s)
    --- PASS: TestWindowFor/low_mmr_default (0.00s)
    --- PASS: TestWindowFor/high_mmr_start (0.00s)
    --- PASS: TestWindowFor/high_mmr_after_30s (0.00s)
    --- PASS: TestWindowFor/high_mmr_capped_700 (0.00s)
PASS
ok  	github.com/tidewaterforge/skyrift/services/matchmaker/director	0.019s"""),
    *commit("matchmaker: faster MMR widening for 2400+, cap 700"),
    ("a", "Committed. High-MMR tickets now reach the 700 cap after ~35s instead of taking ~110s to reach 600."),
),

session(
    "services-node-pool-pending-pods",
    ("u", "inventory and matchmaker pods pending in prod during the event, HPA wants more than we have. `0/38 nodes are available: 38 Insufficient cpu`"),
    read("infra/terraform/gke/nodepools.tf"),
    ("r", """resource "google_container_node_pool" "svc" {
  name     = "svc-pool"
  cluster  = google_container_cluster.prod.id
  location = "us-central1"
  autoscaling {
    min_node_count = 3
    max_node_count = 12
  }
  node_config {
    machine_type = "n2-standard-4"
    image_type   = "COS_CONTAINERD"
    labels       = { workload = "services" }
  }
}"""),
    run("kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod get nodes -l cloud.google.com/gke-nodepool=svc-pool --no-headers | wc -l"),
    ("r", "36"),
    ("a", "svc-pool is n2-standard-4 with max_node_count 12, and for a regional pool that's per zone: 3 zones x 12 = 36 nodes, which is exactly where we are. The autoscaler is at its ceiling. The quick fix is raising max to 20 per zone; the HPA max for inventory (60) and matchmaker frontends (40) fits in that with room."),
    ("u", "ok 20. apply only that resource"),
    ("c", F, {"operation": "replace_string", "path": "infra/terraform/gke/nodepools.tf", "old": "    min_node_count = 3\n    max_node_count = 12", "new": "    min_node_count = 3\n    max_node_count = 20  # per zone; event peaks hit 36 nodes at 12 (SKY-2284)"}),
    ("r", "replaced 1 occurrence in infra/terraform/gke/nodepools.tf"),
    run("cd infra/terraform/gke && terraform apply -target=google_container_node_pool.svc -auto-approve -no-color | tail -4"),
    ("r", """google_container_node_pool.svc: Modifying... [id=projects/tfg-skyrift-prod/locations/us-central1/clusters/skyrift-prod/nodePools/svc-pool]
google_container_node_pool.svc: Modifications complete after 41s

Apply complete! Resources: 0 added, 1 changed, 0 destroyed."""),
    ("u", "pods are scheduling now. commit. should we also go bigger machines there?"),
    *commit("gke: svc-pool max 20 nodes per zone (SKY-2284)"),
    ("a", "Committed. On machine size: the Go services are mostly memory-light and scale horizontally, so n2-standard-4 is fine; bigger nodes would mostly reduce bin-packing waste from the DaemonSets (~0.4 vCPU each node). I'd revisit only if node count keeps climbing past ~50."),
),

session(
    "loki-retention-gameserver-logs",
    ("u", "tomasz wanted server logs from a match 3 weeks ago for a cheating report and loki has nothing older than 14 days. can we keep gameserver logs longer without keeping everything longer"),
    read("deploy/observability/loki/values.yaml"),
    ("r", """loki:
  storage:
    type: gcs
    bucketNames:
      chunks: tfg-skyrift-loki-chunks-prod
      ruler: tfg-skyrift-loki-ruler-prod
  limits_config:
    retention_period: 336h
    ingestion_rate_mb: 24
  compactor:
    retention_enabled: true
    delete_request_store: gcs"""),
    ("a", "Retention is global at 336h (14 days). Loki supports per-stream retention in limits_config, so we can keep namespace=gameservers longer while everything else stays at 14d. Ingest volume for gameservers is the biggest piece though, so let me check what it costs first."),
    run("""logcli series --since=24h '{namespace="gameservers"}' --analyze-labels | head -6; ./scripts/promq 'sum by (namespace) (rate(loki_distributor_bytes_received_total[1d]))*86400/1e9' | sort -k2 -nr | head -4"""),
    ("r", """Total Streams:  18421
Unique Labels:  7
Label Name   Unique Values  Found In Streams
pod          18104          18421
fleet        3              18421
namespace          value
gameservers        41.8
store              6.2
mm                 5.9
inventory          3.1"""),
    ("a", "Gameservers are ~42 GB/day, about 70% of all log volume. Going from 14 to 45 days for that namespace adds ~1.3 TB in the chunks bucket, roughly $26/month on standard storage. Cheap enough. I'll add a retention_stream rule for gameservers at 45 days (1080h)."),
    ("u", "45d ok. ranked only? nah all fleets"),
    ("c", F, {"operation": "replace_string", "path": "deploy/observability/loki/values.yaml", "old": "    retention_period: 336h\n", "new": "    retention_period: 336h\n    retention_stream:\n      - selector: '{namespace=\"gameservers\"}'\n        priority: 1\n        period: 1080h   # 45d for cheating reports / match disputes\n"}),
    ("r", "replaced 1 occurrence in deploy/observability/loki/values.yaml"),
    run("helm --kube-context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n observability upgrade loki grafana/loki -f deploy/observability/loki/values.yaml --version 5.47.2 2>&1 | tail -3"),
    ("r", """Release "loki" has been upgraded. Happy Helming!
NAME: loki
LAST DEPLOYED: Thu Oct 17 10:21:44 2024"""),
    *commit("loki: keep gameservers namespace logs 45d, everything else 14d"),
    ("a", "Deployed and committed. It can't bring back what the compactor already deleted, so the 3-week-old match is gone from Loki; the server log tail saved next to a crash dump would only exist if that match crashed. For client-side evidence, Crashlytics keeps logs per session but only for crashes and non-fatals."),
),

session(
    "play-billing-library-bump",
    ("u", "nadia osei from google play devrel emailed: Play Billing Library 5 apps can't publish updates after Nov 1, we need 6+. what are we on"),
    run("unzip -p Library/PackageCache/com.unity.purchasing@4.8.0/Plugins/UnityPurchasing/Android/GooglePlayBilling.aar META-INF/com/android/build/gradle/aar-metadata.properties; grep -r 'billing:' Library/PackageCache/com.unity.purchasing@4.8.0/Plugins/UnityPurchasing/Android/*.pom"),
    ("r", """aarFormatVersion=1.0
aarMetadataVersion=1.0
Library/PackageCache/com.unity.purchasing@4.8.0/Plugins/UnityPurchasing/Android/GooglePlayBilling.pom:      <artifactId>billing</artifactId><version>5.2.1</version>"""),
    ("a", "We're on Unity IAP 4.8.0, which bundles Play Billing Library 5.2.1, so Nadia's right. Unity IAP 4.10.0 moves to Play Billing 6.0.1; 4.11 goes to 6.2. The API change that touches us is that PBL 6 drops the deprecated SkuDetails path, which Unity IAP handles internally; our code only uses IStoreController. I'd go to 4.11.0."),
    ("u", "ok 4.11. will it break the receipts service? we parse the receipt json there"),
    read("services/receipts/internal/play/verify.go"),
    ("r", """// Verify checks a purchase the client reports, using the payload from the Unity IAP receipt.
func (v *Verifier) Verify(ctx context.Context, rec UnityReceipt) (*Result, error) {
	var p googlePayload
	if err := json.Unmarshal([]byte(rec.Payload), &p); err != nil {
		return nil, fmt.Errorf("play payload: %w", err)
	}
	// only productId and purchaseToken are used; state comes from the Developer API
	return v.check(ctx, p.Json.ProductID, p.Json.PurchaseToken)
}"""),
    ("a", "No: the service only reads productId and purchaseToken from the payload and gets the real purchase state from the Play Developer API, and both fields are unchanged in PBL 6. Bumping the client package."),
    ("c", F, {"operation": "replace_string", "path": "Packages/manifest.json", "old": "\"com.unity.purchasing\": \"4.8.0\"", "new": "\"com.unity.purchasing\": \"4.11.0\""}),
    ("r", "replaced 1 occurrence in Packages/manifest.json"),
    run("./ci/unity-build.sh --target Android --config Release --out /tmp/iap-bump && ./ci/device-smoke.sh --apk /tmp/iap-bump/skyrift.apk --device pixel7-lab-2 --scenario store_purchase_test_sku"),
    ("r", """[unity-build] Build succeeded in 17m58s -> /tmp/iap-bump/skyrift.apk (212.9 MB)
[device-smoke] scenario store_purchase_test_sku
[device-smoke] purchase android.test.purchased ... OK (receipt verified by receipts-staging)
[device-smoke] PASS"""),
    ("u", "ok that worked, thanks. commit and ill reply to nadia"),
    *commit("client: Unity IAP 4.11.0 (Play Billing Library 6), required by Nov 1"),
    ("a", "Committed. For your reply to Nadia: we'll ship Play Billing Library 6.2 via Unity IAP 4.11.0 in the 4.13 client release, well before Nov 1."),
),
]

# ---------------------------------------------------------------- OTHER sessions (3/3)

L_OTHER += [
session(
    "go-gcp-deps-bump",
    ("u", "dependabot opened 6 PRs for the gcp libs, just do them all in one go on a branch. spanner, pubsub, storage"),
    run("go get cloud.google.com/go/spanner@v1.70.0 cloud.google.com/go/pubsub@v1.44.0 cloud.google.com/go/storage@v1.45.0 && go mod tidy && go build ./... "),
    ("r", """go: upgraded cloud.google.com/go/pubsub v1.37.0 => v1.44.0
go: upgraded cloud.google.com/go/spanner v1.60.0 => v1.70.0
go: upgraded cloud.google.com/go/storage v1.40.0 => v1.45.0
go: upgraded google.golang.org/api v0.172.0 => v0.201.0
go: upgraded google.golang.org/grpc v1.63.2 => v1.67.1
# github.com/tidewaterforge/skyrift/services/inventory/store
services/inventory/store/spanner.go:58:22: cfg.SessionPoolConfig.WriteSessions undefined (type spanner.SessionPoolConfig has no field or method WriteSessions)"""),
    read("services/inventory/store/spanner.go"),
    ("r", """func Open(ctx context.Context, db string) (*Store, error) {
	cfg := spanner.ClientConfig{}
	cfg.SessionPoolConfig = spanner.DefaultSessionPoolConfig
	cfg.SessionPoolConfig.MinOpened = 100
	cfg.SessionPoolConfig.WriteSessions = 0.2
	c, err := spanner.NewClientWithConfig(ctx, db, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{c: c}, nil
}"""),
    ("a", "WriteSessions was deprecated a while ago and removed in the newer spanner client: the pool no longer pre-prepares read-write sessions, it inlines the BeginTransaction instead. The setting did nothing useful since v1.5x anyway, so the fix is to drop that line."),
    ("c", F, {"operation": "replace_string", "path": "services/inventory/store/spanner.go", "old": "\tcfg.SessionPoolConfig.WriteSessions = 0.2\n", "new": ""}),
    ("r", "replaced 1 occurrence in services/inventory/store/spanner.go"),
    ("u", "ok run the tests"),
    run("go test ./... -count=1 2>&1 | tail -4"),
    ("r", """ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/pubsubpush	0.012s
ok  	github.com/tidewaterforge/skyrift/services/receipts/cmd/receipts	0.224s
ok  	github.com/tidewaterforge/skyrift/tools/rcpublish	0.011s
ok  	github.com/tidewaterforge/skyrift/tools/botharness	0.431s"""),
    *commit("deps: bump spanner 1.70, pubsub 1.44, storage 1.45; drop WriteSessions"),
    ("a", "All green, committed. Push it as deps/gcp-2024-10 and you can close the six dependabot PRs once this merges."),
),

session(
    "grafana-matchmaking-dashboard",
    ("u", "add a panel to the matchmaking dashboard: time to match p50/p95 per pool, and a second one with tickets waiting per pool. the current dashboard is just cpu graphs lol"),
    run("ls deploy/observability/grafana/dashboards/ && jq '.panels | length, [.panels[].title]' deploy/observability/grafana/dashboards/matchmaking.json"),
    ("r", """gameservers.json
inventory.json
matchmaking.json
receipts.json
4
[
  "CPU by pod",
  "Memory by pod",
  "gRPC requests/s",
  "gRPC errors/s"
]"""),
    ("a", "We have what we need: mm_time_to_match_seconds histogram and mm_tickets_active gauge, both labelled by pool. I'll add two timeseries panels in a new row \"Queue health\" at the top, with pool as the legend and a 30s/60s threshold line on the time-to-match panel."),
    ("c", F, {"operation": "replace_string", "path": "deploy/observability/grafana/dashboards/matchmaking.json", "old": "  \"panels\": [\n", "new": "  \"panels\": [\n    { \"type\": \"row\", \"title\": \"Queue health\", \"gridPos\": { \"h\": 1, \"w\": 24, \"x\": 0, \"y\": 0 } },\n    { \"type\": \"timeseries\", \"title\": \"Time to match (p50 / p95) by pool\", \"gridPos\": { \"h\": 9, \"w\": 12, \"x\": 0, \"y\": 1 },\n      \"fieldConfig\": { \"defaults\": { \"unit\": \"s\", \"thresholds\": { \"mode\": \"absolute\", \"steps\": [ { \"color\": \"green\", \"value\": null }, { \"color\": \"orange\", \"value\": 30 }, { \"color\": \"red\", \"value\": 60 } ] }, \"custom\": { \"thresholdsStyle\": { \"mode\": \"line\" } } } },\n      \"targets\": [\n        { \"expr\": \"histogram_quantile(0.5, sum by (le, pool) (rate(mm_time_to_match_seconds_bucket[5m])))\", \"legendFormat\": \"p50 {{pool}}\" },\n        { \"expr\": \"histogram_quantile(0.95, sum by (le, pool) (rate(mm_time_to_match_seconds_bucket[5m])))\", \"legendFormat\": \"p95 {{pool}}\" } ] },\n    { \"type\": \"timeseries\", \"title\": \"Tickets waiting by pool\", \"gridPos\": { \"h\": 9, \"w\": 12, \"x\": 12, \"y\": 1 },\n      \"targets\": [ { \"expr\": \"sum by (pool) (mm_tickets_active)\", \"legendFormat\": \"{{pool}}\" } ] },\n"}),
    ("r", "replaced 1 occurrence in deploy/observability/grafana/dashboards/matchmaking.json"),
    run("jq empty deploy/observability/grafana/dashboards/matchmaking.json && echo valid"),
    ("r", "parse error: Expected separator between values at line 41, column 5"),
    ("a", "Not from my change: line 41 is in the old \"CPU by pod\" panel, which has a trailing `// TODO` comment. Grafana's importer tolerated it, jq doesn't. Removing the comment."),
    ("c", F, {"operation": "replace_string", "path": "deploy/observability/grafana/dashboards/matchmaking.json", "old": "    \"datasource\": \"Prometheus\" // TODO per-env datasource\n", "new": "    \"datasource\": \"Prometheus\"\n"}),
    ("r", "replaced 1 occurrence in deploy/observability/grafana/dashboards/matchmaking.json"),
    run("jq empty deploy/observability/grafana/dashboards/matchmaking.json && echo valid && kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod -n observability create configmap grafana-dash-matchmaking --from-file=deploy/observability/grafana/dashboards/matchmaking.json --dry-run=client -o yaml | kubectl --context gke_tfg-skyrift-prod_us-central1_skyrift-prod apply -f -"),
    ("r", """valid
configmap/grafana-dash-matchmaking configured"""),
    *commit("grafana: queue health row on matchmaking dashboard"),
    ("a", "Applied the dashboard configmap and committed; Grafana's sidecar picks it up within a minute."),
),

session(
    "inventory-grant-refactor",
    ("u", "inventory Apply() is 200 lines and does wallet + items + audit log inline. split it up before i add bundle grants. no behaviour change"),
    ("a", """Plan, keeping one transaction and the same mutation order:
1. `creditWallet(ctx, tx, g) ([]*spanner.Mutation, error)` - the wallet read and currency math.
2. `stackItems(ctx, tx, g) ([]*spanner.Mutation, error)` - item stacking rules.
3. `grantRecord(g) []*spanner.Mutation` - ReceiptGrants row + audit log row (pure, no reads).
Apply becomes ~20 lines that calls the three and buffers the concatenated mutations. Bundle grants later just loop over stackItems."""),
    ("u", "ok"),
    ("c", F, {"operation": "write_file", "path": "services/inventory/grant.go", "content": "func (s *Service) Apply(ctx context.Context, g Grant) error {\n\t_, err := s.db.ReadWriteTransaction(ctx, func(ctx context.Context, tx *spanner.ReadWriteTransaction) error {\n\t\twallet, err := creditWallet(ctx, tx, g)\n\t\tif err != nil {\n\t\t\treturn fmt.Errorf(\"wallet: %w\", err)\n\t\t}\n\t\titems, err := stackItems(ctx, tx, g)\n\t\tif err != nil {\n\t\t\treturn fmt.Errorf(\"items: %w\", err)\n\t\t}\n\t\tmuts := append(append(wallet, items...), grantRecord(g)...)\n\t\treturn tx.BufferWrite(muts)\n\t})\n\treturn err\n}\n"}),
    ("r", "wrote services/inventory/grant.go (15 lines); moved helpers to services/inventory/grant_wallet.go, grant_items.go, grant_record.go"),
    run("go test ./services/inventory/... -count=1"),
    ("r", """--- FAIL: TestApplyOverflowCapsGems (0.34s)
    grant_test.go:118: error = "wallet: gems overflow", want errors.Is(err, ErrCurrencyCap)
FAIL
FAIL	github.com/tidewaterforge/skyrift/services/inventory	2.612s"""),
    ("a", "My wrapping changed the error: creditWallet returns fmt.Errorf(\"gems overflow\") without %w on ErrCurrencyCap. Previously Apply returned ErrCurrencyCap directly. I'll make creditWallet wrap it so errors.Is keeps working, which also preserves the old behaviour for the receipts caller that checks it."),
    ("c", F, {"operation": "replace_string", "path": "services/inventory/grant_wallet.go", "old": "\t\treturn nil, fmt.Errorf(\"gems overflow\")", "new": "\t\treturn nil, fmt.Errorf(\"gems overflow: %w\", ErrCurrencyCap)"}),
    ("r", "replaced 1 occurrence in services/inventory/grant_wallet.go"),
    ("u", "run the tests again"),
    run("go test ./services/inventory/... ./services/receipts/... -count=1"),
    ("r", """ok  	github.com/tidewaterforge/skyrift/services/inventory	2.590s
ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/apple	1.501s
ok  	github.com/tidewaterforge/skyrift/services/receipts/internal/play	3.044s
ok  	github.com/tidewaterforge/skyrift/services/receipts/cmd/receipts	0.219s"""),
    *commit("inventory: split Apply into wallet/items/record helpers (no behaviour change)"),
    ("a", "Committed. Same transaction, same mutation order, error types preserved."),
),

session(
    "unity-store-price-format",
    ("u", "SKY-2277 german players see '$4.99' in the store instead of '4,99 EUR'. aisha is on the netcode thing, can you look. StoreItemView i think"),
    run("grep -rn '\"\\$\" +' client/Assets/Scripts/ | head"),
    ("r", """client/Assets/Scripts/Store/StoreItemView.cs:31:        priceLabel.text = "$" + product.metadata.localizedPrice.ToString("0.00");
client/Assets/Scripts/Store/DailyDealsPanel.cs:88:        oldPrice.text = "$" + (deal.ReferencePrice).ToString("0.00");
client/Assets/Scripts/Store/BundlePopup.cs:51:        priceButtonLabel.text = "$" + product.metadata.localizedPrice;"""),
    ("a", """Three places build prices with a hard-coded "$":
1. StoreItemView (the one you saw): localizedPrice is just a decimal, formatted with an invariant "0.00". The store already gives us the right string: product.metadata.localizedPriceString comes from Apple/Google with the currency symbol, decimal separator and position for the player's storefront. Use it, falling back to number + isoCurrencyCode only when it's empty (the fake store in the editor).
2. BundlePopup button: same fix.
3. DailyDealsPanel strikethrough price: that reference price isn't a store product, it's a designer-set USD number, so it needs formatting with the deal product's currency and the storefront culture.
We already have a PriceFormat helper in Store/ from the receipts history screen, with For(product) and Reference(amount, product) doing exactly that, so all three can just call it."""),
    ("u", "ok do all three"),
    ("c", F, {"operation": "replace_string", "path": "client/Assets/Scripts/Store/StoreItemView.cs", "old": "        priceLabel.text = \"$\" + product.metadata.localizedPrice.ToString(\"0.00\");", "new": "        priceLabel.text = PriceFormat.For(product);"}),
    ("r", "replaced 1 occurrence in client/Assets/Scripts/Store/StoreItemView.cs"),
    ("c", F, {"operation": "replace_string", "path": "client/Assets/Scripts/Store/BundlePopup.cs", "old": "        priceButtonLabel.text = \"$\" + product.metadata.localizedPrice;", "new": "        priceButtonLabel.text = PriceFormat.For(product);"}),
    ("r", "replaced 1 occurrence in client/Assets/Scripts/Store/BundlePopup.cs"),
    ("c", F, {"operation": "replace_string", "path": "client/Assets/Scripts/Store/DailyDealsPanel.cs", "old": "        oldPrice.text = \"$\" + (deal.ReferencePrice).ToString(\"0.00\");", "new": "        oldPrice.text = PriceFormat.Reference(deal.ReferencePrice, product);"}),
    ("r", "replaced 1 occurrence in client/Assets/Scripts/Store/DailyDealsPanel.cs"),
    run("./ci/unity-test.sh --platform EditMode --filter 'Store.*'"),
    ("r", """EditMode tests: 23 passed, 0 failed, 0 skipped (Store.*)
  PriceFormatTests.For_UsesLocalizedPriceString ... passed
  PriceFormatTests.For_FallsBackToIsoCode ... passed
  PriceFormatTests.Reference_GermanStorefront_UsesCommaAndEuro ... passed"""),
    *commit("client(store): use store-localized price strings via PriceFormat (SKY-2277)"),
    ("a", "Committed. QA can verify with a German sandbox account on iOS and a de-DE Play test account."),
),

session(
    "flaky-director-test-ci",
    ("u", """jenkins go-services job flaky again:
--- FAIL: TestDirectorExpiresOldBackfills (0.00s)
    director_test.go:212: backfills = 1, want 0
passes locally every time"""),
    read("services/matchmaker/director/backfill.go"),
    ("r", """func (d *Director) expireBackfills(ctx context.Context) {
	for _, b := range d.store.Backfills(ctx) {
		if time.Since(b.CreatedAt) > d.cfg.BackfillMaxAge {
			d.store.DeleteBackfill(ctx, b.ID)
		}
	}
}"""),
    read("services/matchmaker/director/director_test.go"),
    ("r", """func TestDirectorExpiresOldBackfills(t *testing.T) {
	d := newTestDirector(t, Config{BackfillMaxAge: 30 * time.Second})
	d.store.PutBackfill(ctx, Backfill{ID: "b1", CreatedAt: time.Now().Add(-30 * time.Second)})
	d.expireBackfills(ctx)
	if n := len(d.store.Backfills(ctx)); n != 0 {
		t.Fatalf("backfills = %d, want 0", n)
	}
}"""),
    ("a", "The test creates a backfill exactly 30s old and the code checks strictly greater than 30s using two separate time.Now() calls. On a fast laptop enough nanoseconds pass between them that time.Since is > 30s; on a busy Jenkins agent with coarse clock reads (the Linux agents run with tsc unstable and fall back to hpet) they can be equal, and the backfill survives. The fix is to inject a clock so the test controls time exactly, and decide the boundary explicitly (>= max age expires)."),
    ("u", "yeah inject a clock, we have clockwork in go.mod already"),
    ("c", F, {"operation": "replace_string", "path": "services/matchmaker/director/backfill.go", "old": "\t\tif time.Since(b.CreatedAt) > d.cfg.BackfillMaxAge {", "new": "\t\tif d.clock.Since(b.CreatedAt) >= d.cfg.BackfillMaxAge {"}),
    ("r", "replaced 1 occurrence in services/matchmaker/director/backfill.go"),
    ("c", F, {"operation": "replace_string", "path": "services/matchmaker/director/director_test.go", "old": "\td := newTestDirector(t, Config{BackfillMaxAge: 30 * time.Second})\n\td.store.PutBackfill(ctx, Backfill{ID: \"b1\", CreatedAt: time.Now().Add(-30 * time.Second)})", "new": "\tclk := clockwork.NewFakeClock()\n\td := newTestDirector(t, Config{BackfillMaxAge: 30 * time.Second}, withClock(clk))\n\td.store.PutBackfill(ctx, Backfill{ID: \"b1\", CreatedAt: clk.Now()})\n\tclk.Advance(30 * time.Second)"}),
    ("r", "replaced 1 occurrence in services/matchmaker/director/director_test.go"),
    run("go test ./services/matchmaker/director/ -run Backfill -count=500 2>&1 | tail -2"),
    ("r", """ok  	github.com/tidewaterforge/skyrift/services/matchmaker/director	3.911s"""),
    *commit("matchmaker: inject clock into director, fix flaky backfill expiry test"),
    ("a", "Committed; 500 runs clean locally."),
),

session(
    "review-season-rank-migration",
    ("u", "review PR #812 from priya please, adds LastSeasonRank to Players. spanner migration + backfill job. want it merged before s5 reset"),
    run("gh pr diff 812 --name-only && gh pr diff 812 -- db/migrations/0048_players_last_season_rank.sql"),
    ("r", """db/migrations/0048_players_last_season_rank.sql
services/inventory/season/backfill.go
services/inventory/season/backfill_test.go
---
ALTER TABLE Players ADD COLUMN LastSeasonRank INT64 NOT NULL DEFAULT (0);
CREATE INDEX Players_ByLastSeasonRank ON Players(LastSeasonRank);"""),
    run("gh pr diff 812 -- services/inventory/season/backfill.go | sed -n '1,40p'"),
    ("r", """+func Backfill(ctx context.Context, db *spanner.Client, season string) error {
+	stmt := spanner.Statement{
+		SQL: `UPDATE Players p SET LastSeasonRank = (
+		        SELECT s.FinalRank FROM SeasonResults s
+		        WHERE s.PlayerId = p.PlayerId AND s.Season = @season)
+		      WHERE TRUE`,
+		Params: map[string]any{"season": season},
+	}
+	_, err := db.PartitionedUpdate(ctx, stmt)
+	return err
+}"""),
    run("gcloud spanner databases execute-sql gamedb --instance=skyrift-prod --project tfg-skyrift-prod --sql='SELECT COUNT(*) FROM Players' --query-mode=NORMAL"),
    ("r", """
18412907"""),
    ("a", """Review notes:
1. The index on LastSeasonRank alone is a hotspot: a monotonically clustered, low-cardinality INT64 (ranks 0-30) means most of 18.4M rows land in a few splits, and every season reset rewrites all of them. Who reads it? If it's the leaderboard, index (Season, LastSeasonRank, PlayerId) or drop it.
2. The backfill subquery returns NULL for players without a SeasonResults row, and the column is NOT NULL, so the partitioned update will fail on the first such partition. Needs COALESCE(..., 0).
3. NOT NULL DEFAULT (0) on an 18M-row table is fine in Spanner (no rewrite), good.
4. Partitioned DML over 18M rows: expect ~20-40 minutes on prod; fine, but run it before the reset window, not during."""),
    ("u", "agree on 2. for 1 ask her who reads it. post it"),
    run("gh pr review 812 --request-changes --body-file /tmp/review-812.md"),
    ("r", "- Requested changes to pull request tidewaterforge/skyrift#812"),
    ("u", "she says the index is for the s5 placement matches query, only reads top 500"),
    ("a", "Then a plain index on LastSeasonRank alone is still the wrong shape for \"top 500\": she wants ORDER BY LastSeasonRank DESC LIMIT 500, which an index with DESC order serves directly, and adding STORING (DisplayName) avoids the back-join. I'd suggest `CREATE INDEX Players_ByLastSeasonRankDesc ON Players(LastSeasonRank DESC) STORING (DisplayName)`; the hotspot concern is smaller for a read-mostly index that's written once per season."),
    run("gh pr comment 812 --body 'For top-500 placement reads: CREATE INDEX Players_ByLastSeasonRankDesc ON Players(LastSeasonRank DESC) STORING (DisplayName). Plus COALESCE in the backfill for players without SeasonResults.'"),
    ("r", "https://github.com/tidewaterforge/skyrift/pull/812#issuecomment-2419933051"),
    ("a", "Posted. Once she pushes the COALESCE fix and the index change it's good to merge from my side."),
),
]

# ---------------------------------------------------------------- probes

L_PROBES = [
    # same: shares key words with its fact session
    {"text": "what bufferSize did we set on the ranked fleet autoscaler in prod?", "kind": "same",
     "session": "ranked-fleet-autoscaler-prod", "needles": ["bufferSize: 35"]},
    {"text": "vantaguard sdk is crashing the android client again. who was the guy to escalate to on their side", "kind": "same",
     "session": "vantaguard-sdk-escalation", "needles": ["Lukas Brenner"]},
    {"text": "whats the staging redis host for the matchmaker again", "kind": "same",
     "session": "staging-redis-host-after-migration", "needles": ["10.128.14.5"]},
    {"text": "remind me the k6 command for the matchmaking soak, the vus and duration we used", "kind": "same",
     "session": "k6-matchmaking-soak-setup", "needles": ["--vus 4000", "--duration 45m"]},
    {"text": "players stuck on searching after backgrounding the app again. what ticket ttl did we put in the matchmaker config, and why that number?", "kind": "same",
     "session": "matchmaker-ticket-ttl", "needles": ["ticket_ttl_seconds: 150"]},
    {"text": "which bucket do the dedicated server minidumps get uploaded to? tomasz needs another crash dump", "kind": "same",
     "session": "gameserver-minidump-location", "needles": ["tfg-skyrift-minidumps-prod"]},

    # reworded: same facts asked in other words
    {"text": "some android buyers got their premium currency credited twice again. what did we change last time to stop that from happening", "kind": "reworded",
     "session": "play-rtdn-duplicate-grants", "needles": ["ReceiptGrants_ByPurchaseToken"]},
    {"text": "can we upgrade the game engine for the mobile app? i vaguely remember something blocking us from going newer", "kind": "reworded",
     "session": "unity-editor-version-pin", "needles": ["2022.3.21f1"]},
    {"text": "where is the apple upload key kept for the iphone pipeline? the job says it can't find it", "kind": "reworded",
     "session": "ios-release-signing-credentials", "needles": ["asc-api-key-skyrift"]},
    {"text": "when are designers permitted to push balance tweaks live?", "kind": "reworded",
     "session": "remote-config-publish-window", "needles": ["15:00 UTC"]},
    {"text": "which vm flavour did we pick to fix the hitching?", "kind": "reworded",
     "session": "ranked-gameserver-node-pool", "needles": ["c2d-standard-8"]},
    {"text": "refund revocations for iphone purchases stopped once after a domain change. what address did we paste into apple's portal", "kind": "reworded",
     "session": "apple-server-notifications-url", "needles": ["/apple/asn/v2"]},

    # unrelated: everyday turns
    {"text": "ok go ahead", "kind": "unrelated"},
    {"text": "same error again", "kind": "unrelated"},
    {"text": "hmm no, revert that and try the other way", "kind": "unrelated"},

    # unrelated: new work that shares words with the archive
    {"text": "add a k6 scenario for the store purchase flow that hits the receipts verify endpoint", "kind": "unrelated"},
    {"text": "write a grafana alert for when the ranked fleet has fewer than 5 ready gameservers for 2 minutes", "kind": "unrelated"},
    {"text": "add a remote config flag so live ops can turn off daily deals per country", "kind": "unrelated"},

    # unrelated: near-miss questions (siblings of settled facts, not answered anywhere)
    {"text": "what bufferSize did we end up with for the casual fleet in prod?", "kind": "unrelated"},
    {"text": "whats the prod redis host for the matchmaker tickets", "kind": "unrelated"},
    {"text": "where does the android upload keystore live for the jenkins release job, and its password?", "kind": "unrelated"},
    {"text": "remind me which android NDK version we pinned and why", "kind": "unrelated"},
    {"text": "what TTL did we give party invites in redis? players say old invites linger", "kind": "unrelated"},
    {"text": "who's our account manager at vantaguard for the contract renewal?", "kind": "unrelated"},
]
