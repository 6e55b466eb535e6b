"""Harrowgate Mutual is a mid-sized UK motor and home insurer; its engineering team builds
Claimwise, the claims-processing platform that takes a claim from first notice of loss to
settlement. Stack: Python 3.12, FastAPI services (claims-api, documents-service, estimates-service),
SQLAlchemy 2 + Alembic on PostgreSQL (AWS RDS Aurora), Temporal workflows for claim lifecycles,
AWS (ECS Fargate, S3, SQS, Lambda, Textract OCR for scanned documents), a React adjuster portal,
Terraform, GitLab CI, Datadog and pytest. Team: Priya Raman (tech lead), Dana Okafor (backend,
Temporal workflows), Tomasz Wieczorek (platform / Terraform / CI), Luis Ferreira (frontend,
adjuster portal), Mei Lin Chow (QA and test automation), Graham Pettit (engineering manager) and
Sunil Mehta (data engineer). External: Corin Ashby, integration engineer at PanelPoint Estimates
(body-shop estimate vendor), and a solutions engineer at Veritrace (fraud-scoring vendor)."""
from __future__ import annotations

from dsl import F, commit, read, run, session

K_FACT = [
    # F1 -- OCR activity start_to_close timeout (value in tool output / code)
    session(
        "ocr-activity-timeout",
        ("u", "CLM-2291 ocr activity keeps timing out on the big medical bundles. temporal ui shows ActivityTaskTimedOut, timeout type START_TO_CLOSE. whats it set to rn"),
        read("services/claim_workflows/workflows/document_intake.py"),
        ("r", """from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from claim_workflows.activities.ocr import run_textract_ocr, store_ocr_result
    from claim_workflows.activities.classify import classify_document
    from claim_workflows.retry_policies import OCR_RETRY, DEFAULT_RETRY


@workflow.defn(name="DocumentIntake")
class DocumentIntakeWorkflow:
    @workflow.run
    async def run(self, doc: "IntakeDocument") -> "IntakeResult":
        kind = await workflow.execute_activity(
            classify_document,
            doc,
            start_to_close_timeout=timedelta(seconds=45),
            retry_policy=DEFAULT_RETRY,
        )
        ocr = await workflow.execute_activity(
            run_textract_ocr,
            doc,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=timedelta(seconds=60),
            retry_policy=OCR_RETRY,
        )
        await workflow.execute_activity(
            store_ocr_result,
            ocr,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=DEFAULT_RETRY,
        )
        return IntakeResult(document_id=doc.document_id, kind=kind, pages=ocr.pages)
"""),
        ("a", "It's 5 minutes for `run_textract_ocr` (heartbeat 60s). The activity starts a Textract async job and polls GetDocumentAnalysis until it finishes, so on big bundles the whole Textract job has to fit inside that window. Let me check how long the real jobs take before picking a number."),
        run("python scripts/textract_job_stats.py --env prod --since 14d --min-pages 150"),
        ("r", """textract async jobs (prod, last 14d, >=150 pages)  n=63
pages      count   p50       p95       max
150-199    29      3m41s     5m02s     5m38s
200-249    21      4m55s     7m10s     7m44s
250-299     9      6m20s     9m01s     9m12s
300+        4      8m47s     10m52s    11m06s   (doc 7f1e0c2a, 312 pages, claim 88-402-7731)
timed out at activity level (START_TO_CLOSE): 17
retries that eventually succeeded: 5   (each retry restarts the textract job from scratch)"""),
        ("a", """So anything past ~200 pages has a decent chance of blowing the 5 minute window, and because each retry starts a fresh Textract job, the retries mostly time out the same way. The worst job in two weeks was the 312-page bundle at 11m06s.

I'd set start_to_close to 14 minutes: that's the 11m06s max plus roughly 25% headroom for Textract queueing at peak. Heartbeat stays at 60s because the poll loop heartbeats every 15s, so a dead worker is still noticed within a minute."""),
        ("u", "ok do 14. anything else need to change? workflow run timeout?"),
        ("a", "DocumentIntake is started without a run or execution timeout (the parent ClaimLifecycle sets none either), so nothing else caps it. Only the one line changes."),
        ("c", F, {"operation": "replace_string", "path": "services/claim_workflows/workflows/document_intake.py",
                  "old": "            start_to_close_timeout=timedelta(minutes=5),\n            heartbeat_timeout=timedelta(seconds=60),",
                  "new": "            # CLM-2291: 312-page bundle took 11m06s in textract; ~25% headroom\n            start_to_close_timeout=timedelta(minutes=14),\n            heartbeat_timeout=timedelta(seconds=60),"}),
        ("r", "Replaced 1 occurrence in services/claim_workflows/workflows/document_intake.py"),
        run("cd services/claim_workflows && pytest tests/workflows/test_document_intake.py -q"),
        ("r", """.......                                                                  [100%]
7 passed in 3.88s"""),
        ("u", "looks good, commit it"),
        *commit("CLM-2291 raise OCR activity start_to_close to 14 minutes for large bundles"),
        ("a", "Committed. Once it's deployed, the 17 timed-out intakes can be retried from the portal's 'Re-run OCR' action."),
    ),

    # F2 -- who to escalate to at Veritrace
    session(
        "veritrace-escalation-contact",
        ("u", "INC-4471 veritrace fraud scores all coming back null since about 09:40, their status page is all green. who do we escalate to on their side"),
        run("curl -s -o /dev/null -w '%{http_code} %{time_total}\\n' https://api.veritrace.io/v2/health"),
        ("r", "200 0.184"),
        run("dd-logs query 'service:claims-api @logger:fraud.veritrace' --from 09:30 --limit 5"),
        ("r", """09:41:07 INFO  fraud.veritrace score_request claim=88-411-0032 status=200 score=null reason=MODEL_UNAVAILABLE request_id=vt-9f31c2
09:41:12 INFO  fraud.veritrace score_request claim=88-411-0036 status=200 score=null reason=MODEL_UNAVAILABLE request_id=vt-9f31d7
09:42:55 WARN  fraud.router no score, routing claim=88-411-0032 to manual_review
09:43:20 INFO  fraud.veritrace score_request claim=88-411-0041 status=200 score=null reason=MODEL_UNAVAILABLE request_id=vt-9f3214
09:43:21 WARN  fraud.router no score, routing claim=88-411-0041 to manual_review"""),
        ("a", "Their API is up (health 200, calls return 200), but the body says `reason=MODEL_UNAVAILABLE`, so it's their model serving, not the gateway. Their public status page only tracks the API gateway, which is why it's green. Claims are falling back to manual_review, so nothing is being auto-cleared, but the manual queue will grow. Checking our vendor doc for the escalation path."),
        read("docs/vendors/veritrace.md"),
        ("r", """# Veritrace (fraud scoring)

Contract: VT-HGM-2023-014, renewal each March. Owner on our side: Priya Raman.

## API
- Base URL: https://api.veritrace.io/v2
- Auth: API key per environment (see Secrets Manager, never in the repo)
- Docs: https://docs.veritrace.io/api/v2

## Support
- Non-urgent (questions, config changes): support portal, P3 SLA = 1 business day.
- Production-impacting (scores missing/wrong for prod traffic): do NOT use the portal.
  Escalate directly to Nadia Brandt (Solutions Engineer, owns our account technically)
  in the shared Slack channel #ext-veritrace-harrowgate and tag @veritrace-oncall.
  Her phone number is in the 1Password vault "Vendors", item "Veritrace escalation".
- Always include our request_id values (prefix vt-) so they can find the traces."""),
        ("a", """Escalate to **Nadia Brandt**, their Solutions Engineer who owns our account technically:

1. Post in #ext-veritrace-harrowgate and tag @veritrace-oncall (the portal is only for non-urgent stuff).
2. Include request ids, e.g. vt-9f31c2, vt-9f31d7, vt-9f3214, and the start time (09:41 UTC).
3. If nobody answers in ~15 minutes, her phone number is in 1Password, vault "Vendors", item "Veritrace escalation".

Draft message: "Prod impact for Harrowgate: since 09:41 UTC all /v2/score responses are 200 with score=null reason=MODEL_UNAVAILABLE. Sample request_ids: vt-9f31c2, vt-9f31d7, vt-9f3214. Status page shows green." """),
        ("u", "pinged her, she says bad model deploy on their side, rolling back now. can you add a note to the doc that their status page doesnt cover model serving"),
        ("c", F, {"operation": "replace_string", "path": "docs/vendors/veritrace.md",
                  "old": "- Always include our request_id values (prefix vt-) so they can find the traces.",
                  "new": "- Always include our request_id values (prefix vt-) so they can find the traces.\n- Their public status page only covers the API gateway, NOT model serving. A 200 with\n  score=null reason=MODEL_UNAVAILABLE is a model outage even when the page is green (INC-4471)."}),
        ("r", "Replaced 1 occurrence in docs/vendors/veritrace.md"),
        *commit("docs: veritrace status page does not cover model serving (INC-4471)"),
        ("u", "scores are back. thanks"),
        ("a", "Good. 23 claims went to manual_review during the outage; I can list them if the adjusters want to re-score rather than review by hand."),
    ),

    # F3 -- PanelPoint webhook HMAC secret location
    session(
        "panelpoint-webhook-secret",
        ("u", "adding signature verification for panelpoint webhooks in estimates-service. where does the hmac secret live for prod? dont paste the value obviously"),
        run("grep -rn -i panelpoint infra/terraform/envs/prod/*.tf"),
        ("r", """infra/terraform/envs/prod/secrets.tf:41:resource "aws_secretsmanager_secret" "panelpoint_webhook_hmac" {
infra/terraform/envs/prod/secrets.tf:42:  name        = "claimwise/prod/panelpoint/webhook-hmac"
infra/terraform/envs/prod/secrets.tf:43:  description = "HMAC-SHA256 key PanelPoint uses to sign estimate webhooks"
infra/terraform/envs/prod/secrets.tf:44:  kms_key_id  = aws_kms_key.claimwise_secrets.arn
infra/terraform/envs/prod/ecs_estimates.tf:88:        { name = "PANELPOINT_WEBHOOK_SECRET", valueFrom = aws_secretsmanager_secret.panelpoint_webhook_hmac.arn },
infra/terraform/envs/prod/ecs_estimates.tf:112:  # panelpoint egress is via the NAT gateway; their allowlist has our EIP"""),
        run("aws secretsmanager describe-secret --secret-id claimwise/prod/panelpoint/webhook-hmac --region eu-west-2 --query '{Name:Name,Rotation:RotationEnabled,Changed:LastChangedDate}'"),
        ("r", """{
    "Name": "claimwise/prod/panelpoint/webhook-hmac",
    "Rotation": false,
    "Changed": "2024-06-11T10:02:44.517000+01:00"
}"""),
        ("a", """It's in Secrets Manager (eu-west-2) as `claimwise/prod/panelpoint/webhook-hmac`, KMS-encrypted with the claimwise_secrets key. You don't need to read it in code: the estimates-service task definition already injects it as the env var `PANELPOINT_WEBHOOK_SECRET` (ecs_estimates.tf:88). Rotation is off; it was last changed in June, when PanelPoint re-keyed on their side. So the service just has to read the env var."""),
        read("services/estimates/estimates/settings.py"),
        ("r", """from pydantic_settings import BaseSettings


class Settings(BaseSettings):
    database_url: str
    panelpoint_base_url: str = "https://api.panelpoint-estimates.com/v3"
    panelpoint_api_key: str
    sqs_estimates_queue_url: str

    model_config = {"env_file": ".env"}


settings = Settings()"""),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/settings.py",
                  "old": "    panelpoint_api_key: str\n",
                  "new": "    panelpoint_api_key: str\n    panelpoint_webhook_secret: str  # injected by ECS from Secrets Manager\n"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/settings.py"),
        ("c", F, {"operation": "create_file", "path": "services/estimates/estimates/webhook_auth.py",
                  "content": "import hashlib\nimport hmac\n\nfrom fastapi import Header, HTTPException, Request\n\nfrom estimates.settings import settings\n\n\nasync def verify_panelpoint_signature(request: Request, x_panelpoint_signature: str = Header(...)) -> None:\n    body = await request.body()\n    expected = hmac.new(settings.panelpoint_webhook_secret.encode(), body, hashlib.sha256).hexdigest()\n    if not hmac.compare_digest(expected, x_panelpoint_signature.removeprefix(\"sha256=\")):\n        raise HTTPException(status_code=401, detail=\"bad signature\")\n"}),
        ("r", "Created services/estimates/estimates/webhook_auth.py"),
        run("cd services/estimates && pytest tests/test_webhook_auth.py -q"),
        ("r", """....                                                                     [100%]
4 passed in 0.71s"""),
        ("u", "nice. commit"),
        *commit("estimates: verify PanelPoint webhook HMAC signature"),
        ("a", "Committed. For local dev, put any dummy value in PANELPOINT_WEBHOOK_SECRET in services/estimates/.env; the tests sign their payloads with a fixture key."),
    ),

    # F4 -- duplicate notes: SQS visibility timeout vs lambda timeout
    session(
        "sqs-duplicate-notes",
        ("u", "CLM-2350 adjusters seeing duplicate 'document received' notes on claims, 2 or 3 copies, almost same timestamp. happening mostly on big uploads"),
        run("psql \"$CLAIMWISE_RO_URL\" -c \"select claim_id, document_id, count(*), min(created_at), max(created_at) from claim_notes where kind='document_received' and created_at > now() - interval '7 days' group by 1,2 having count(*) > 1 order by 3 desc limit 6;\""),
        ("r", """  claim_id   |             document_id              | count |            min             |            max
-------------+--------------------------------------+-------+----------------------------+----------------------------
 88-409-1187 | 2b9d0f1e-7c41-4a1f-9a0e-5d1f3f6b8c20 |     3 | 2024-09-16 11:02:07.31+00  | 2024-09-16 11:03:12.88+00
 88-409-2290 | c0a8e3d4-19f2-4e5b-8f0c-0d2e7a1b9e44 |     2 | 2024-09-17 08:44:51.02+00  | 2024-09-17 08:45:23.57+00
 88-410-0071 | 91f4b6aa-3e0d-4c8e-b2a7-6f0e1c5d7a19 |     2 | 2024-09-18 15:20:10.40+00  | 2024-09-18 15:20:44.93+00
 88-410-0413 | 5e7c2d90-aa18-4b3e-9c61-2f8d0b4e1a77 |     2 | 2024-09-19 09:12:33.15+00  | 2024-09-19 09:13:04.61+00
(4 rows)"""),
        ("a", "The copies are ~30-35 seconds apart, which smells like SQS redelivery rather than a double upload. Checking the intake queue and the consumer Lambda."),
        run("aws sqs get-queue-attributes --queue-url https://sqs.eu-west-2.amazonaws.com/418772093311/claimwise-prod-document-intake --attribute-names VisibilityTimeout --query Attributes"),
        ("r", """{
    "VisibilityTimeout": "30"
}"""),
        read("infra/terraform/modules/document_intake/main.tf"),
        ("r", """resource "aws_sqs_queue" "intake" {
  name                       = "claimwise-${var.env}-document-intake"
  visibility_timeout_seconds = 30
  message_retention_seconds  = 345600
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.intake_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_lambda_function" "intake_consumer" {
  function_name = "claimwise-${var.env}-intake-consumer"
  runtime       = "python3.12"
  handler       = "intake_consumer.handler"
  timeout       = 90
  memory_size   = 512
}

resource "aws_lambda_event_source_mapping" "intake" {
  event_source_arn = aws_sqs_queue.intake.arn
  function_name    = aws_lambda_function.intake_consumer.arn
  batch_size       = 1
}"""),
        ("a", """Found it.

1. The intake-consumer Lambda has a 90s timeout, and on big uploads it really does run 40-60s (it hashes the file and writes the note before starting the DocumentIntake workflow).
2. The queue's visibility timeout is only 30s. After 30s the message becomes visible again while the first invocation is still working, so a second invocation picks it up and writes another note. At 60s you can get a third one.
3. The gaps in the duplicates (31-65 seconds) match that exactly.

Fix: AWS's guidance for Lambda event sources is a visibility timeout of at least 6x the function timeout, so 6 x 90 = 540 seconds. Separately, the note insert should be idempotent on (claim_id, document_id, kind), so any redelivery is harmless."""),
        ("u", "ok set it to 540. idempotency as a separate ticket pls"),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/modules/document_intake/main.tf",
                  "old": "  visibility_timeout_seconds = 30\n",
                  "new": "  # 6x the consumer lambda timeout (90s), see CLM-2350\n  visibility_timeout_seconds = 540\n"}),
        ("r", "Replaced 1 occurrence in infra/terraform/modules/document_intake/main.tf"),
        run("terraform -chdir=infra/terraform/envs/prod plan -target=module.document_intake -no-color | tail -12"),
        ("r", """  # module.document_intake.aws_sqs_queue.intake will be updated in-place
  ~ resource "aws_sqs_queue" "intake" {
        id                         = "https://sqs.eu-west-2.amazonaws.com/418772093311/claimwise-prod-document-intake"
        name                       = "claimwise-prod-document-intake"
      ~ visibility_timeout_seconds = 30 -> 540
        # (9 unchanged attributes hidden)
    }

Plan: 0 to add, 1 to change, 0 to destroy."""),
        *commit("CLM-2350 intake queue visibility timeout 540s (6x consumer lambda timeout)"),
        ("a", "Committed; the plan only touches the one queue attribute. I opened CLM-2356 for the unique index on claim_notes (claim_id, document_id, kind) plus ON CONFLICT DO NOTHING in the consumer."),
    ),

    # F5 -- staging RDS host (value only in tool output)
    session(
        "rds-staging-host",
        ("u", "need to point my local alembic at the staging db to check migration state before CLM-2402 ships. what host do i use"),
        run("terraform -chdir=infra/terraform/envs/staging output -json rds"),
        ("r", """{
  "cluster_endpoint": "claimwise-stg.cluster-c8xq2lmv4kfa.eu-west-2.rds.amazonaws.com",
  "reader_endpoint": "claimwise-stg.cluster-ro-c8xq2lmv4kfa.eu-west-2.rds.amazonaws.com",
  "port": 5432,
  "database_name": "claimwise",
  "iam_auth_enabled": true,
  "master_secret_arn": "arn:aws:secretsmanager:eu-west-2:527104966120:secret:claimwise/staging/rds-master-Qx81Lm"
}"""),
        ("a", "Use the `cluster_endpoint` from that output (the writer; alembic needs it, not the reader), port 5432, database `claimwise`. IAM auth is on, so generate a token instead of using the master secret."),
        ("u", "psql: error: connection to server ... failed: Connection timed out"),
        ("a", "Expected: the cluster sits in private subnets. Tunnel through the SSM bastion and connect to localhost instead:"),
        run("aws ssm start-session --target i-0b7d41c2e95a3f880 --document-name AWS-StartPortForwardingSessionToRemoteHost --parameters '{\"host\":[\"claimwise-stg.cluster-c8xq2lmv4kfa.eu-west-2.rds.amazonaws.com\"],\"portNumber\":[\"5432\"],\"localPortNumber\":[\"15432\"]}' &"),
        ("r", """Starting session with SessionId: priya.raman-0e4c1b7a9f2d
Port 15432 opened for sessionId priya.raman-0e4c1b7a9f2d.
Waiting for connections..."""),
        run("export PGPASSWORD=$(aws rds generate-db-auth-token --hostname claimwise-stg.cluster-c8xq2lmv4kfa.eu-west-2.rds.amazonaws.com --port 5432 --username claimwise_dev --region eu-west-2) && DATABASE_URL=postgresql+psycopg://claimwise_dev@localhost:15432/claimwise?sslmode=require alembic -c services/claims_api/alembic.ini current"),
        ("r", """INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.
INFO  [alembic.runtime.migration] Will assume transactional DDL.
b81c4e7d2a90 (head)"""),
        ("a", "Staging is at `b81c4e7d2a90`, which is the current head on main *before* your branch. So the CLM-2402 migration (`e3f05a9c11b2`, adds `claims.salvage_status`) is not applied there yet, and the staging deploy job will run it. Nothing is drifted."),
        ("u", "ok that worked, thanks. kill the tunnel"),
        run("kill %1"),
        ("r", "[1]+  Terminated              aws ssm start-session --target i-0b7d41c2e95a3f880 ..."),
        ("a", "Tunnel closed."),
    ),

    # F6 -- temporalio SDK pinned and why
    session(
        "pin-temporalio-sdk",
        ("u", """renovate MR !812 bumps temporalio 1.7.1 -> 1.8.0 and workflow tests explode:

E   temporalio.worker.workflow_sandbox._restrictions.RestrictedWorkflowAccessError: Cannot access decimal.getcontext.__call__ from inside a workflow. If this is code from a module not used in a workflow or known to only be used deterministically from a workflow, mark the import as pass through.

can we just pass it through?"""),
        read("services/claim_workflows/claim_workflows/money.py"),
        ("r", """import decimal
from decimal import Decimal, ROUND_HALF_EVEN


def to_pence(amount: Decimal) -> int:
    ctx = decimal.getcontext()
    ctx.rounding = ROUND_HALF_EVEN
    return int((amount * 100).to_integral_value(context=ctx))


def apply_excess(gross: Decimal, excess: Decimal) -> Decimal:
    ctx = decimal.getcontext()
    ctx.prec = 28
    return max(Decimal("0"), gross - excess)"""),
        ("a", """Passing it through would silence the error but it's not actually safe here. `money.py` *mutates* the thread-local decimal context (`ctx.rounding = ...`, `ctx.prec = 28`). Inside the sandbox several workflows share the worker's threads, so one workflow changing the global context can change another's rounding mid-replay. That is the nondeterminism 1.8.0 is now catching (1.7.x just didn't restrict `decimal.getcontext`).

The real fix is for money.py to build its own `decimal.Context(prec=28, rounding=ROUND_HALF_EVEN)` and pass it explicitly, without touching the global. That touches every payout calculation, so it needs its own ticket and a replay test against prod histories."""),
        ("u", "ok. pin it for now then, make a ticket for money.py. make sure renovate stops opening this"),
        read("services/claim_workflows/pyproject.toml"),
        ("r", """[project]
name = "claim-workflows"
requires-python = ">=3.12"
dependencies = [
    "temporalio>=1.7,<2",
    "sqlalchemy>=2.0.30",
    "pydantic>=2.7",
    "httpx>=0.27",
    "boto3>=1.34",
]"""),
        ("c", F, {"operation": "replace_string", "path": "services/claim_workflows/pyproject.toml",
                  "old": "    \"temporalio>=1.7,<2\",",
                  "new": "    # pinned: 1.8 sandbox blocks decimal.getcontext used by money.py; unpin after CLM-2440\n    \"temporalio==1.7.1\","}),
        ("r", "Replaced 1 occurrence in services/claim_workflows/pyproject.toml"),
        ("c", F, {"operation": "replace_string", "path": "renovate.json",
                  "old": "  \"packageRules\": [",
                  "new": "  \"packageRules\": [\n    {\"matchPackageNames\": [\"temporalio\"], \"enabled\": false, \"description\": \"pinned until CLM-2440 (decimal context in money.py)\"},"}),
        ("r", "Replaced 1 occurrence in renovate.json"),
        run("cd services/claim_workflows && uv lock && pytest -q"),
        ("r", """Resolved 41 packages in 1.12s
Updated temporalio v1.8.0 -> v1.7.1
..........................................................               [100%]
58 passed in 11.40s"""),
        *commit("pin temporalio==1.7.1 until money.py stops mutating decimal context (CLM-2440)"),
        ("a", "Pinned to 1.7.1 with a comment pointing at CLM-2440, renovate is told to leave temporalio alone, and tests are green. Closing !812 with a link to CLM-2440 so Dana has the context."),
    ),
]

K_FACT += [
    # F7 -- SIU referral threshold for personal auto (value late in a long reply)
    session(
        "fraud-siu-threshold",
        ("u", "graham wants the SIU referral cutoff for personal auto decided before veritrace go-live. current draft in config is 0.75. mei lin ran the backtest, csv is in reports/"),
        run("python scripts/summarise_backtest.py reports/veritrace_backtest_2024q3.csv --line personal_auto"),
        ("r", """veritrace backtest, personal_auto, 2024-Q3 closed claims (n=6,914, confirmed fraud=212)
threshold  referred  referral_rate  caught  recall  precision  est_monthly_referrals
0.70       1,667     24.1%          187     88.2%   11.2%      554
0.75       1,307     18.9%          179     84.4%   13.7%      434
0.78         968     14.0%          171     80.7%   17.7%      322
0.80         774     11.2%          166     78.3%   21.4%      257
0.82         602      8.7%          158     74.5%   26.2%      200
0.85         415      6.0%          139     65.6%   33.5%      138
0.90         214      3.1%          101     47.6%   47.2%       71"""),
        ("a", "Backtest covers 6,914 closed personal auto claims with 212 confirmed fraud. Before I recommend anything: do you know the SIU team's capacity? The draft 0.75 would send them ~434 referrals a month."),
        ("u", "SIU lead said they can handle about 200 a month max with current headcount"),
        ("a", """Then 0.75 is out: ~434 a month is more than double what they can work, and an over-full queue means referrals age out and get cleared by default, which is worse than a lower recall.

Going down the table against a ~200/month budget:

1. 0.78 -> ~322/month. Still 60% over capacity.
2. 0.80 -> ~257/month. Closer, but still over, and month-end spikes would push it further.
3. 0.85 -> ~138/month. Comfortably inside capacity, but recall drops to 65.6%, so we'd miss ~19 more confirmed frauds per quarter than the next option.
4. 0.82 -> ~200/month, recall 74.5%, precision 26.2%. That's right at capacity and keeps three quarters of confirmed fraud.

My recommendation is **0.82** for personal auto, reviewed after the first full quarter of live scoring, because the live score distribution usually drifts a bit from the backtest. If SIU gets more headcount, 0.80 is the next step down."""),
        ("u", "agreed, graham signed off on 0.82. put it in config"),
        read("config/fraud.yaml"),
        ("r", """# Fraud routing (CLM-2395). Scores come from Veritrace /v2/score, range 0..1.
personal_auto:
  vendor: veritrace
  siu_referral_threshold: 0.75   # DRAFT - pending SIU capacity
  manual_review_band: [0.55, 0.75]
  on_missing_score: manual_review"""),
        ("c", F, {"operation": "replace_string", "path": "config/fraud.yaml",
                  "old": "  siu_referral_threshold: 0.75   # DRAFT - pending SIU capacity\n  manual_review_band: [0.55, 0.75]",
                  "new": "  siu_referral_threshold: 0.82   # backtest 2024-Q3: ~200 referrals/month = SIU capacity; signed off by Graham\n  manual_review_band: [0.55, 0.82]"}),
        ("r", "Replaced 1 occurrence in config/fraud.yaml"),
        run("pytest services/claims_api/tests/fraud -q"),
        ("r", """.........F..
FAILED tests/fraud/test_router.py::test_score_at_threshold_goes_to_siu - AssertionError: assert 'manual_review' == 'siu'
1 failed, 11 passed in 2.03s"""),
        ("a", "That test hardcodes 0.75 as the score. Changing it to read the threshold from config so it doesn't break on the next tweak."),
        ("c", F, {"operation": "replace_string", "path": "services/claims_api/tests/fraud/test_router.py",
                  "old": "    decision = route(score=0.75, line=\"personal_auto\")",
                  "new": "    threshold = load_fraud_config()[\"personal_auto\"][\"siu_referral_threshold\"]\n    decision = route(score=threshold, line=\"personal_auto\")"}),
        ("r", "Replaced 1 occurrence in services/claims_api/tests/fraud/test_router.py"),
        run("pytest services/claims_api/tests/fraud -q"),
        ("r", """............
12 passed in 1.97s"""),
        *commit("fraud: personal_auto SIU referral threshold 0.82 (CLM-2395)"),
    ),

    # F8 -- PanelPoint estimate reconciliation schedule
    session(
        "estimate-reconcile-schedule",
        ("u", "when does the panelpoint estimate reconciliation job actually run? corin from panelpoint says their side has maintenance 01:00-02:00 UTC and asked if we overlap"),
        run("grep -rn -B2 -A6 'estimate_reconcile' infra/terraform/envs/prod/schedules.tf"),
        ("r", """infra/terraform/envs/prod/schedules.tf-17-
infra/terraform/envs/prod/schedules.tf-18-# Pulls final repair estimates from PanelPoint and reconciles against reserves.
infra/terraform/envs/prod/schedules.tf:19:resource "aws_cloudwatch_event_rule" "estimate_reconcile" {
infra/terraform/envs/prod/schedules.tf-20-  name                = "claimwise-prod-estimate-reconcile"
infra/terraform/envs/prod/schedules.tf-21-  description         = "Nightly PanelPoint estimate reconciliation"
infra/terraform/envs/prod/schedules.tf-22-  schedule_expression = "cron(15 2 * * ? *)"
infra/terraform/envs/prod/schedules.tf-23-}
infra/terraform/envs/prod/schedules.tf-24-
infra/terraform/envs/prod/schedules.tf-25-resource "aws_cloudwatch_event_target" "estimate_reconcile" {"""),
        run("aws logs filter-log-events --log-group-name /aws/lambda/claimwise-prod-estimate-reconcile --filter-pattern '\"reconcile start\"' --start-time $(date -d '-5 days' +%s000) --query 'events[].message' --output text"),
        ("r", """2024-09-20T02:15:04Z reconcile start estimates_pending=143
2024-09-21T02:15:03Z reconcile start estimates_pending=98
2024-09-22T02:15:05Z reconcile start estimates_pending=61
2024-09-23T02:15:02Z reconcile start estimates_pending=170
2024-09-24T02:15:04Z reconcile start estimates_pending=152"""),
        ("a", """No overlap. The EventBridge rule `claimwise-prod-estimate-reconcile` uses `cron(15 2 * * ? *)`. EventBridge cron is always UTC, so it fires daily at 02:15 UTC, and the last five runs all started between 02:15:02 and 02:15:05. That's 15 minutes after their window closes. You can tell Corin we start at 02:15 UTC every day, including weekends."""),
        ("u", "their window sometimes overruns to like 02:10 tho. do we just leave it"),
        ("a", "I'd leave the schedule alone and make the job tolerate it: right now a 503 from PanelPoint fails the whole run and we wait until the next night. I'll add a retry with backoff on 503/504 (up to ~20 minutes) so an overrun only delays us."),
        read("services/estimates/estimates/reconcile.py"),
        ("r", """import httpx

from estimates.settings import settings


def fetch_final_estimates(since):
    with httpx.Client(base_url=settings.panelpoint_base_url, timeout=30) as client:
        resp = client.get("/estimates", params={"status": "final", "updated_since": since.isoformat()},
                          headers={"X-Api-Key": settings.panelpoint_api_key})
        resp.raise_for_status()
        return resp.json()["items"]"""),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/reconcile.py",
                  "old": "import httpx\n",
                  "new": "import httpx\nfrom tenacity import retry, retry_if_exception, stop_after_delay, wait_exponential\n\n\ndef _is_maintenance(exc: BaseException) -> bool:\n    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in (503, 504)\n"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/reconcile.py"),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/reconcile.py",
                  "old": "def fetch_final_estimates(since):",
                  "new": "@retry(retry=retry_if_exception(_is_maintenance), wait=wait_exponential(multiplier=30, max=300), stop=stop_after_delay(1200))\ndef fetch_final_estimates(since):"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/reconcile.py"),
        run("cd services/estimates && pytest tests/test_reconcile.py -q"),
        ("r", """......
6 passed in 0.94s"""),
        *commit("estimates: retry reconciliation fetch through PanelPoint maintenance overruns"),
    ),

    # F9 -- claims-api local port
    session(
        "claims-api-local-port",
        ("u", """fresh clone on the new laptop, docker compose up, claims-api dies straight away:

claims-api-1  | ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use
claims-api-1 exited with code 1"""),
        read("docker-compose.yml"),
        ("r", """services:
  postgres:
    image: postgres:16
    ports: ["5432:5432"]
    environment:
      POSTGRES_PASSWORD: dev
  documents-service:
    build: services/documents
    network_mode: host
    command: uvicorn documents.main:app --host 0.0.0.0 --port 8000
  claims-api:
    build: services/claims_api
    network_mode: host
    command: uvicorn claims_api.main:app --host 0.0.0.0 --port ${CLAIMS_API_PORT:-8000}
    env_file: services/claims_api/.env"""),
        ("a", "Both services run with `network_mode: host`, and documents-service binds 8000 first. claims-api takes `CLAIMS_API_PORT` from the environment but falls back to 8000 too. Let me see what the port is supposed to be."),
        run("git log -S 'CLAIMS_API_PORT' --oneline -- docker-compose.yml .env.example && grep -n PORT .env.example"),
        ("r", """a91c0e4 merge main into feat/portal-claim-timeline
3be77f2 dev: move claims-api off 8000, documents-service owns it
.env.example:3:CLAIMS_API_PORT=8071
.env.example:4:TEMPORAL_ADDRESS=localhost:7233"""),
        ("a", """Two things:

1. The convention (commit 3be77f2) is that documents-service owns 8000 and claims-api runs on **8071**. It's in `.env.example` as `CLAIMS_API_PORT=8071`, but on a fresh clone you don't have a `.env` at the repo root yet, so compose falls back to the default.
2. The merge a91c0e4 reset the compose default from 8071 back to 8000, which is why the fallback collides.

I'll put the default back to 8071 so it works without a root `.env`."""),
        ("c", F, {"operation": "replace_string", "path": "docker-compose.yml",
                  "old": "--port ${CLAIMS_API_PORT:-8000}",
                  "new": "--port ${CLAIMS_API_PORT:-8071}"}),
        ("r", "Replaced 1 occurrence in docker-compose.yml"),
        run("docker compose up -d claims-api && sleep 3 && curl -s localhost:8071/healthz"),
        ("r", """[+] Running 1/1
 - Container claimwise-claims-api-1  Started
{"status":"ok","db":"ok","temporal":"ok"}"""),
        ("u", "works. commit"),
        *commit("dev: restore claims-api compose default port after bad merge"),
        ("a", "Committed. The README's quick-start also still says `curl localhost:8000/healthz` for claims-api; want that fixed too?"),
        ("u", "yeah"),
        ("c", F, {"operation": "replace_string", "path": "README.md",
                  "old": "curl localhost:8000/healthz   # claims-api",
                  "new": "curl localhost:8071/healthz   # claims-api (documents-service is on 8000)"}),
        ("r", "Replaced 1 occurrence in README.md"),
        *commit("docs: claims-api local port in quick-start"),
    ),
]

K_FACT += [
    # F10 -- pdf-splitter lambda memory (value late in a long reply)
    session(
        "pdf-splitter-lambda-memory",
        ("u", "pdf-splitter lambda OOMing again, CLM-2488. its a 410 page scanned police report, Runtime.OutOfMemory in the logs"),
        run("aws logs tail /aws/lambda/claimwise-prod-pdf-splitter --since 2h --filter-pattern '?REPORT ?Runtime' | tail -4"),
        ("r", """2024-09-26T13:02:41 START RequestId: 6c0e2f91-41b7-4d7a-9a53-0f2d8e71c4aa Version: $LATEST
2024-09-26T13:03:19 RequestId: 6c0e2f91-41b7-4d7a-9a53-0f2d8e71c4aa Error: Runtime exited with error: signal: killed
Runtime.OutOfMemory
2024-09-26T13:03:19 REPORT RequestId: 6c0e2f91-41b7-4d7a-9a53-0f2d8e71c4aa Duration: 37811.52 ms Billed Duration: 37812 ms Memory Size: 1024 MB Max Memory Used: 1024 MB"""),
        read("lambdas/pdf_splitter/handler.py"),
        ("r", """import io

import boto3
import pikepdf

CHUNK_PAGES = 40
s3 = boto3.client("s3")


def handler(event, context):
    bucket, key = event["bucket"], event["key"]
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    pdf = pikepdf.open(io.BytesIO(body))
    parts = []
    for start in range(0, len(pdf.pages), CHUNK_PAGES):
        out = pikepdf.new()
        out.pages.extend(pdf.pages[start:start + CHUNK_PAGES])
        buf = io.BytesIO()
        out.save(buf)
        part_key = f"{key}.part{start // CHUNK_PAGES:03d}.pdf"
        s3.put_object(Bucket=bucket, Key=part_key, Body=buf.getvalue())
        parts.append(part_key)
    return {"parts": parts, "pages": len(pdf.pages)}"""),
        run("python -m memray run -o /tmp/split.bin scripts/run_splitter_local.py fixtures/big/police_report_410p.pdf && python -m memray stats /tmp/split.bin | grep -E 'Peak|Total allocations'"),
        ("r", """Peak memory usage: 2.61GiB
Total allocations: 1843022"""),
        ("a", """The file is 380 MB of scanned images, and the handler holds it three times: the raw bytes from S3, pikepdf's parsed copy, and each chunk's `BytesIO` buffer, which isn't freed until the next loop turn. Locally that peaks at 2.61 GiB, so 1024 MB never had a chance on this file.

Options:

1. **Stream it properly**: download to /tmp instead of memory, open with pikepdf from the path, and upload each part with `upload_file` from disk. Peak drops to roughly one chunk, so it'd fit even in 1024 MB. It's maybe half a day of work plus testing against the fixture set.
2. **Give the function more memory now**: we need headroom over 2.61 GiB, and Lambda CPU scales with memory, so a bigger size also makes the split faster (fewer billed ms per GB). The sensible value is 3008 MB: ~15% above the measured peak, and the splitter only runs a few hundred times a day, so the cost difference is pennies.

I'd do (2) now to unblock CLM-2488 and (1) as a follow-up, then drop memory back down afterwards."""),
        ("u", "just bump it for now, streaming rewrite is CLM-2490"),
        read("infra/terraform/modules/pdf_splitter/main.tf"),
        ("r", """resource "aws_lambda_function" "pdf_splitter" {
  function_name = "claimwise-${var.env}-pdf-splitter"
  runtime       = "python3.12"
  handler       = "handler.handler"
  memory_size   = 1024
  timeout       = 600
  ephemeral_storage {
    size = 2048
  }
  layers = [var.pikepdf_layer_arn]
}"""),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/modules/pdf_splitter/main.tf",
                  "old": "  memory_size   = 1024\n",
                  "new": "  memory_size   = 3008 # CLM-2488: 410p scan peaks at 2.61GiB; revisit after CLM-2490 streaming\n"}),
        ("r", "Replaced 1 occurrence in infra/terraform/modules/pdf_splitter/main.tf"),
        run("terraform -chdir=infra/terraform/envs/prod plan -target=module.pdf_splitter -no-color | grep -E 'memory_size|Plan:'"),
        ("r", """      ~ memory_size                    = 1024 -> 3008
Plan: 0 to add, 1 to change, 0 to destroy."""),
        *commit("pdf-splitter: raise lambda memory for large scanned PDFs (CLM-2488)"),
        ("u", "applied via the pipeline. can you re-run the failed one"),
        run("aws lambda invoke --function-name claimwise-prod-pdf-splitter --payload fileb://tmp/clm2488_event.json /tmp/out.json && jq '.pages, (.parts|length)' /tmp/out.json"),
        ("r", """{
    "StatusCode": 200,
    "ExecutedVersion": "$LATEST"
}
410
11"""),
        ("a", "Went through: 410 pages split into 11 parts. The DocumentIntake workflow picks the parts up from S3 on its own."),
    ),

    # F11 -- temporal reset command for stuck workflows
    session(
        "temporal-reset-stuck-workflow",
        ("u", """CLM-2511 claim workflow for 88-410-2291 stuck since the estimate activity fix deployed. worker logs:

temporalio.workflow._NondeterminismError: Workflow activation completion failed: Failure { failure: Some(Failure { message: "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'fetch_panelpoint_estimate' does not match activity type of activity command 'request_estimate_v2'" ..."""),
        run("temporal workflow show --namespace claimwise-prod --workflow-id claim-88-410-2291 --output table | tail -8"),
        ("r", """  31  ActivityTaskScheduled       fetch_panelpoint_estimate
  32  ActivityTaskStarted
  33  ActivityTaskCompleted
  34  WorkflowTaskScheduled
  35  WorkflowTaskStarted
  36  WorkflowTaskFailed          WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
  37  WorkflowTaskScheduled
  38  WorkflowTaskStarted"""),
        ("a", "The fix renamed the activity (`fetch_panelpoint_estimate` -> `request_estimate_v2`) without a `workflow.patched()` guard, so any ClaimLifecycle that had already scheduled the old activity can't replay on the new code. Retrying won't help; it fails the same way forever. Let me see how many are affected."),
        run("temporal workflow list --namespace claimwise-prod --query 'WorkflowType=\"ClaimLifecycle\" AND ExecutionStatus=\"Running\" AND TemporalReportedProblems IN (\"category=WorkflowTaskFailed\")' --output json | jq -r '.[].execution.workflowId'"),
        ("r", """claim-88-410-2291
claim-88-410-2304
claim-88-410-2317
claim-88-410-2336
claim-88-410-2340
claim-88-410-2352
claim-88-410-2369"""),
        ("a", """Seven. Options:

1. Add `workflow.patched("estimate-v2")` around the activity call so old histories replay the old branch. That's the right long-term fix, and Dana's MR !829 already does it.
2. For these seven, a reset is quicker: resetting to the first workflow task replays the whole history on the new code from scratch, and the signals they've received (adjuster notes, document uploads) are reapplied after the reset point by default.

Since !829 is merged and deployed as of 10 minutes ago, the patch alone should unstick them on the next retry. If they're still failing after it, reset."""),
        ("u", "still failing after !829, dana says the patch only covers new schedules. go with the reset"),
        run("temporal workflow reset --namespace claimwise-prod --query 'WorkflowType=\"ClaimLifecycle\" AND ExecutionStatus=\"Running\" AND TemporalReportedProblems IN (\"category=WorkflowTaskFailed\")' --type FirstWorkflowTask --reason 'CLM-2511 nondeterminism after estimate activity rename' --yes"),
        ("r", """Start batch against approximately 7 workflow(s)
Started batch for job ID: 4b1e77c0-9d2a-4f53-8e61-a0c3f5d2e918"""),
        run("temporal batch describe --namespace claimwise-prod --job-id 4b1e77c0-9d2a-4f53-8e61-a0c3f5d2e918"),
        ("r", """  State                 Completed
  TotalOperationCount   7
  CompleteOperationCount 7
  FailureOperationCount 0"""),
        ("a", "All 7 reset, none failed. They're now on new runs that replayed cleanly to the estimate step. I'll write the exact command into the runbook, since this is the second time we've needed it."),
        ("c", F, {"operation": "replace_string", "path": "docs/runbooks/temporal.md",
                  "old": "## Stuck workflows\n",
                  "new": "## Stuck workflows\n\nNondeterminism after a deploy (TMPRL1100) that a patch can't fix: reset in batch to the first workflow task.\n\n    temporal workflow reset --namespace claimwise-prod \\\n      --query '<visibility query selecting the stuck runs>' \\\n      --type FirstWorkflowTask --reason '<ticket> <why>' --yes\n\nSignals after the reset point are reapplied. Check with `temporal batch describe --job-id <id>`.\n"}),
        ("r", "Replaced 1 occurrence in docs/runbooks/temporal.md"),
        *commit("runbook: batch reset for nondeterministic ClaimLifecycle workflows (CLM-2511)"),
    ),

    # F12 -- Brackenridge Logistics straight-through settlement limit
    session(
        "brackenridge-stp-limit",
        ("u", "CS-318 brackenridge logistics signed the addendum, account team says their straight-through settlement limit goes up to 4750 quid per claim, glass and minor bodywork only like before. where does that live"),
        run("grep -rln -i brackenridge config/ services/claims_api/claims_api/"),
        ("r", """config/accounts/brackenridge-logistics.yaml
services/claims_api/claims_api/accounts/fixtures.py"""),
        read("config/accounts/brackenridge-logistics.yaml"),
        ("r", """account_id: ACC-00417
name: Brackenridge Logistics Ltd
line: commercial_fleet
account_manager: j.osei@harrowgate.example
straight_through:
  enabled: true
  limit_gbp: 2500
  perils: [glass, minor_bodywork]
  requires_estimate_from: panelpoint
notifications:
  settlement_email: fleetclaims@brackenridge.example"""),
        ("a", "It's `straight_through.limit_gbp` in config/accounts/brackenridge-logistics.yaml, currently 2500. Claims for this account under the limit, in the listed perils and with a PanelPoint estimate, settle without an adjuster. Updating it."),
        ("c", F, {"operation": "replace_string", "path": "config/accounts/brackenridge-logistics.yaml",
                  "old": "  limit_gbp: 2500\n",
                  "new": "  limit_gbp: 4750   # CS-318 addendum signed\n"}),
        ("r", "Replaced 1 occurrence in config/accounts/brackenridge-logistics.yaml"),
        run("pytest services/claims_api/tests/accounts -q"),
        ("r", """..F....
FAILED tests/accounts/test_stp.py::test_brackenridge_glass_under_limit_settles - AssertionError: expected 'settled' for gross=Decimal('2499.99'), limit from fixture=2500
1 failed, 6 passed in 1.12s"""),
        read("services/claims_api/claims_api/accounts/fixtures.py"),
        ("r", """BRACKENRIDGE = AccountConfig(
    account_id="ACC-00417",
    straight_through=StraightThrough(enabled=True, limit_pence=250000, perils=("glass", "minor_bodywork")),
)"""),
        ("a", "The test fixture duplicates the config in pence instead of loading the YAML, so it disagrees now. Making the fixture load the real file so this can't drift again."),
        ("c", F, {"operation": "replace_string", "path": "services/claims_api/claims_api/accounts/fixtures.py",
                  "old": "BRACKENRIDGE = AccountConfig(\n    account_id=\"ACC-00417\",\n    straight_through=StraightThrough(enabled=True, limit_pence=250000, perils=(\"glass\", \"minor_bodywork\")),\n)",
                  "new": "BRACKENRIDGE = load_account_config(\"brackenridge-logistics\")"}),
        ("r", "Replaced 1 occurrence in services/claims_api/claims_api/accounts/fixtures.py"),
        run("pytest services/claims_api/tests/accounts -q"),
        ("r", """.......
7 passed in 1.09s"""),
        ("u", "ok commit. and tell me the pence value so i can tell finance what shows in the settlement report"),
        *commit("accounts: Brackenridge STP limit per CS-318 addendum; fixture loads YAML"),
        ("a", "Committed. The settlement report shows limits in pence, so Brackenridge's will read 475000 (GBP 4,750.00). Glass and minor bodywork only, still needs a PanelPoint estimate."),
    ),
]

K_OTHER = [
    # O1 -- near-miss for ocr-activity-timeout: retry policy of the same activity
    session(
        "ocr-retry-policy",
        ("u", "textract throttling us on monday mornings. ProvisionedThroughputExceededException in the ocr activity, then the retries all fire at once and get throttled again"),
        read("services/claim_workflows/claim_workflows/retry_policies.py"),
        ("r", """from datetime import timedelta

from temporalio.common import RetryPolicy

DEFAULT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)

OCR_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)"""),
        run("dd-logs query 'service:claim-workers @activity:run_textract_ocr status:error' --from 'last monday 07:00' --to 'last monday 10:00' --facet @error.kind"),
        ("r", """@error.kind                                   count
ProvisionedThroughputExceededException        412
ThrottlingException                            37
InvalidS3ObjectException                        6
activity attempts exhausted (5/5)              58"""),
        ("a", """OCR_RETRY is just a copy of the default: 1s initial interval capped at 30s. That's far too tight for Textract's throttling, which is a per-account TPS limit on StartDocumentAnalysis. With 5 attempts in under a minute, the Monday backlog burns through all of them while the limit is still saturated (58 exhausted runs last Monday).

Also `InvalidS3ObjectException` is being retried 5 times, which can never succeed (it's a corrupt or unsupported upload).

Proposal for OCR_RETRY only:
- initial_interval 10s, backoff 2.0, maximum_interval 5 min
- maximum_attempts 8 (covers ~25 minutes of throttling)
- non_retryable_error_types: InvalidS3ObjectException, UnsupportedDocumentException"""),
        ("u", "ok. dont touch DEFAULT_RETRY"),
        ("c", F, {"operation": "replace_string", "path": "services/claim_workflows/claim_workflows/retry_policies.py",
                  "old": "OCR_RETRY = RetryPolicy(\n    initial_interval=timedelta(seconds=1),\n    backoff_coefficient=2.0,\n    maximum_interval=timedelta(seconds=30),\n    maximum_attempts=5,\n)",
                  "new": "# Textract throttles per account; spread retries out (CLM-2377)\nOCR_RETRY = RetryPolicy(\n    initial_interval=timedelta(seconds=10),\n    backoff_coefficient=2.0,\n    maximum_interval=timedelta(minutes=5),\n    maximum_attempts=8,\n    non_retryable_error_types=[\"InvalidS3ObjectException\", \"UnsupportedDocumentException\"],\n)"}),
        ("r", "Replaced 1 occurrence in services/claim_workflows/claim_workflows/retry_policies.py"),
        run("cd services/claim_workflows && pytest tests/ -q -k 'ocr or retry'"),
        ("r", """.....F
FAILED tests/activities/test_ocr.py::test_invalid_object_is_retried - AssertionError: expected ActivityError with retry_state=MAXIMUM_ATTEMPTS_REACHED, got NON_RETRYABLE_FAILURE
1 failed, 5 passed in 2.61s"""),
        ("a", "That test asserted the old (wrong) behaviour. Renaming it to `test_invalid_object_is_not_retried` and asserting NON_RETRYABLE_FAILURE."),
        ("c", F, {"operation": "replace_string", "path": "services/claim_workflows/tests/activities/test_ocr.py",
                  "old": "def test_invalid_object_is_retried(",
                  "new": "def test_invalid_object_is_not_retried("}),
        ("r", "Replaced 1 occurrence in services/claim_workflows/tests/activities/test_ocr.py"),
        ("c", F, {"operation": "replace_string", "path": "services/claim_workflows/tests/activities/test_ocr.py",
                  "old": "    assert err.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED",
                  "new": "    assert err.retry_state == RetryState.NON_RETRYABLE_FAILURE"}),
        ("r", "Replaced 1 occurrence in services/claim_workflows/tests/activities/test_ocr.py"),
        run("cd services/claim_workflows && pytest tests/ -q -k 'ocr or retry'"),
        ("r", """......
6 passed in 2.55s"""),
        *commit("CLM-2377 OCR retry policy: back off on textract throttling, don't retry bad objects"),
        ("a", "Committed. We could also ask AWS for a StartDocumentAnalysis TPS increase; Tomasz owns the service quota requests."),
    ),

    # O2 -- near-miss for veritrace contact / secret location: rate limit + STAGING key path
    session(
        "veritrace-rate-limit",
        ("u", "running the veritrace backfill on staging for the 2024 open claims and half the calls are 429. what's their limit"),
        run("tail -5 logs/backfill_veritrace_staging.log"),
        ("r", """14:02:11 WARN score claim=88-388-9012 http=429 retry_after=1 x-ratelimit-limit=20 x-ratelimit-remaining=0
14:02:11 WARN score claim=88-388-9013 http=429 retry_after=1 x-ratelimit-limit=20 x-ratelimit-remaining=0
14:02:11 INFO score claim=88-388-9001 http=200 score=0.41
14:02:12 WARN score claim=88-388-9015 http=429 retry_after=1 x-ratelimit-limit=20 x-ratelimit-remaining=0
14:02:12 INFO progress 1,840/9,955 ok=1,212 rate_limited=628"""),
        ("a", "The headers say it: `x-ratelimit-limit=20`, i.e. 20 requests per second per API key. Their API reference also documents a burst of 40. The backfill script fires with 64 concurrent workers and no pacing, so it's always over."),
        read("scripts/backfill_veritrace.py"),
        ("r", """import asyncio
import os

import boto3
import httpx

CONCURRENCY = 64
SECRET_ID = os.environ.get("VERITRACE_SECRET_ID", "claimwise/staging/veritrace/api-key")


def api_key() -> str:
    sm = boto3.client("secretsmanager", region_name="eu-west-2")
    return sm.get_secret_value(SecretId=SECRET_ID)["SecretString"]


async def score_one(client, sem, claim):
    async with sem:
        r = await client.post("/score", json=claim.payload())
        ..."""),
        ("a", "I'll add a simple async token bucket at 18 rps (a little under the limit, because the live claims-api on staging uses the same key) and honour `retry_after` on 429 instead of counting it as a failure. Key lookup stays as is: it reads `claimwise/staging/veritrace/api-key` by default and can be overridden with VERITRACE_SECRET_ID."),
        ("c", F, {"operation": "replace_string", "path": "scripts/backfill_veritrace.py",
                  "old": "CONCURRENCY = 64\n",
                  "new": "CONCURRENCY = 16\nRATE_PER_SEC = 18  # veritrace: 20 rps per key (burst 40); staging api shares the key\n"}),
        ("r", "Replaced 1 occurrence in scripts/backfill_veritrace.py"),
        ("c", F, {"operation": "replace_string", "path": "scripts/backfill_veritrace.py",
                  "old": "async def score_one(client, sem, claim):\n    async with sem:\n",
                  "new": "async def score_one(client, sem, claim, bucket):\n    async with sem:\n        await bucket.acquire()\n"}),
        ("r", "Replaced 1 occurrence in scripts/backfill_veritrace.py"),
        run("python scripts/backfill_veritrace.py --env staging --resume-from 88-388-9012 2>&1 | tail -3"),
        ("r", """14:31:40 INFO progress 9,955/9,955 ok=9,951 rate_limited=0 errors=4
14:31:40 INFO errors: 4 x http=422 (missing vehicle_vrm)
14:31:40 INFO done in 8m31s"""),
        ("u", "nice. the 4 422s are old claims with no reg, ignore. commit"),
        *commit("backfill_veritrace: pace to 18 rps and honour retry_after"),
        ("a", "Committed. For a prod backfill later: prod has its own key and limit, so check the headers there before reusing 18 rps."),
    ),

    # O3 -- PanelPoint estimate payload v3 change (same vendor, different attribute)
    session(
        "panelpoint-estimate-v3-fields",
        ("u", "corin ashby from panelpoint emailed: from 14 oct estimate webhooks include labour_hours and paint_hours, and parts[] gets oem_or_aftermarket. we need to store them. CLM-2461"),
        read("services/estimates/estimates/schemas.py"),
        ("r", """from decimal import Decimal

from pydantic import BaseModel


class EstimatePart(BaseModel):
    part_number: str
    description: str
    unit_price: Decimal
    quantity: int


class EstimateWebhook(BaseModel):
    estimate_id: str
    claim_ref: str
    body_shop_id: str
    status: str
    total_gross: Decimal
    parts: list[EstimatePart]"""),
        ("a", "I'll add the new fields as optional, so webhooks from before 14 Oct (and any retries of old estimates) still validate, then add the columns with an Alembic migration."),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/schemas.py",
                  "old": "    quantity: int\n",
                  "new": "    quantity: int\n    oem_or_aftermarket: Literal[\"oem\", \"aftermarket\"] | None = None\n"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/schemas.py"),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/schemas.py",
                  "old": "    total_gross: Decimal\n",
                  "new": "    total_gross: Decimal\n    labour_hours: Decimal | None = None\n    paint_hours: Decimal | None = None\n"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/schemas.py"),
        run("cd services/estimates && alembic revision --autogenerate -m 'estimate labour and paint hours, part sourcing'"),
        ("r", """INFO  [alembic.autogenerate.compare] Detected added column 'estimates.labour_hours'
INFO  [alembic.autogenerate.compare] Detected added column 'estimates.paint_hours'
INFO  [alembic.autogenerate.compare] Detected added column 'estimate_parts.oem_or_aftermarket'
  Generating services/estimates/migrations/versions/9d2c7e11f4a0_estimate_labour_and_paint_hours_part_.py ...  done"""),
        read("services/estimates/migrations/versions/9d2c7e11f4a0_estimate_labour_and_paint_hours_part_.py"),
        ("r", """def upgrade() -> None:
    op.add_column("estimates", sa.Column("labour_hours", sa.Numeric(6, 2), nullable=True))
    op.add_column("estimates", sa.Column("paint_hours", sa.Numeric(6, 2), nullable=True))
    op.add_column("estimate_parts", sa.Column("oem_or_aftermarket", sa.String(length=16), nullable=True))


def downgrade() -> None:
    op.drop_column("estimate_parts", "oem_or_aftermarket")
    op.drop_column("estimates", "paint_hours")
    op.drop_column("estimates", "labour_hours")"""),
        ("a", "Migration looks right: nullable columns only, so no table rewrite on Postgres and it's safe to run during the day. Running tests with Corin's sample payload added as a fixture."),
        run("cd services/estimates && pytest -q"),
        ("r", """.......................
23 passed in 2.88s"""),
        ("u", "should we ask him if oem_or_aftermarket can ever be missing after the 14th"),
        ("a", "Worth asking. I kept it optional either way, but if they guarantee it, we can add a NOT NULL constraint later with a backfill. Suggested wording: \"After 14 Oct, can parts[].oem_or_aftermarket ever be absent or null, e.g. for labour-only lines or sublet items?\""),
        *commit("CLM-2461 store PanelPoint labour/paint hours and part sourcing"),
    ),

    # O4 -- near-miss for sqs-duplicate-notes: DLQ / maxReceiveCount on the same queue
    session(
        "intake-dlq-redrive",
        ("u", "datadog alert: claimwise-prod-document-intake-dlq has messages. 37 of them. whats going on"),
        run("aws sqs get-queue-attributes --queue-url https://sqs.eu-west-2.amazonaws.com/418772093311/claimwise-prod-document-intake --attribute-names RedrivePolicy --query Attributes.RedrivePolicy --output text"),
        ("r", """{"deadLetterTargetArn":"arn:aws:sqs:eu-west-2:418772093311:claimwise-prod-document-intake-dlq","maxReceiveCount":4}"""),
        run("aws sqs receive-message --queue-url https://sqs.eu-west-2.amazonaws.com/418772093311/claimwise-prod-document-intake-dlq --max-number-of-messages 3 --visibility-timeout 0 --query 'Messages[].Body' --output text | jq -c '{key, content_type}'"),
        ("r", """{"key":"uploads/88-411-1204/IMG_4471.HEIC","content_type":"image/heic"}
{"key":"uploads/88-411-1230/IMG_0093.HEIC","content_type":"image/heic"}
{"key":"uploads/88-411-1251/photo_2.heic","content_type":"image/heic"}"""),
        ("a", "Every message failed 4 times (maxReceiveCount is 4) and all three samples are HEIC photos. The new iOS upload flow in the portal stopped converting to JPEG on the client. Checking the consumer."),
        read("lambdas/intake_consumer/intake_consumer.py"),
        ("r", """ALLOWED = {"application/pdf", "image/jpeg", "image/png", "image/tiff"}


def handler(event, context):
    for record in event["Records"]:
        msg = json.loads(record["body"])
        if msg["content_type"] not in ALLOWED:
            raise ValueError(f"unsupported content type {msg['content_type']}")
        ..."""),
        ("a", """The consumer raises on anything not in ALLOWED, so HEIC goes round 4 times and lands in the DLQ. Two fixes:

1. Convert HEIC to JPEG in the consumer (pillow-heif is already in the image layer for documents-service, so we can reuse the layer), then process as JPEG.
2. For truly unsupported types, write a 'needs resubmission' note and delete the message instead of raising, so the DLQ only holds real failures."""),
        ("u", "do both. then redrive"),
        ("c", F, {"operation": "replace_string", "path": "lambdas/intake_consumer/intake_consumer.py",
                  "old": "        if msg[\"content_type\"] not in ALLOWED:\n            raise ValueError(f\"unsupported content type {msg['content_type']}\")",
                  "new": "        if msg[\"content_type\"] in (\"image/heic\", \"image/heif\"):\n            msg = convert_heic_to_jpeg(msg)\n        if msg[\"content_type\"] not in ALLOWED:\n            add_resubmission_note(msg)\n            continue"}),
        ("r", "Replaced 1 occurrence in lambdas/intake_consumer/intake_consumer.py"),
        run("pytest lambdas/intake_consumer -q"),
        ("r", """.........
9 passed in 1.47s"""),
        *commit("intake-consumer: convert HEIC uploads, note unsupported types instead of failing"),
        ("u", "deployed. redrive now"),
        run("aws sqs start-message-move-task --source-arn arn:aws:sqs:eu-west-2:418772093311:claimwise-prod-document-intake-dlq --max-number-of-messages-per-second 5"),
        ("r", """{
    "TaskHandle": "eyJ0YXNrSWQiOiI3YzFmMGU5Yi0..."
}"""),
        ("a", "Redrive started at 5 msg/s; the 37 messages are back on the main queue within ~10 seconds. I'll check the DLQ is empty and the notes appeared in a couple of minutes."),
    ),

    # O5 -- near-miss for rds-staging-host: PROD instance class, no endpoints
    session(
        "rds-prod-instance-class",
        ("u", "prod aurora writer pegged at 85-90% cpu during month end close again. tomasz says bump the instance class. can you prep the MR"),
        read("infra/terraform/envs/prod/rds.tf"),
        ("r", """module "aurora" {
  source                  = "../../modules/aurora_pg"
  env                     = "prod"
  engine_version          = "16.2"
  writer_instance_class   = "db.r6g.xlarge"
  reader_instance_class   = "db.r6g.large"
  reader_count            = 1
  backup_retention_days   = 35
  performance_insights    = true
  parameter_group_family  = "aurora-postgresql16"
}"""),
        run("dd-metrics query 'avg:aws.rds.cpuutilization{dbinstanceidentifier:claimwise-prod-writer}' --from '2024-09-27' --to '2024-10-02' --rollup max,3600 | tail -6"),
        ("r", """2024-09-30T14:00Z  91.3
2024-09-30T15:00Z  88.7
2024-09-30T16:00Z  86.2
2024-10-01T09:00Z  84.9
2024-10-01T10:00Z  79.4
2024-10-01T11:00Z  62.0"""),
        ("a", """Month-end peaks at ~91% on the writer. Going from db.r6g.xlarge (4 vCPU, 32 GiB) to db.r6g.2xlarge (8 vCPU, 64 GiB) doubles both and roughly doubles the writer's cost. Before doing that, Performance Insights shows the top wait is one query: the reserves roll-up `select ... from reserves join claims ... group by claim_id` that the month-end report runs every 5 minutes. An index on reserves (claim_id, effective_at) might take most of the load off.

I'd still prep the instance-class MR since month end is in four weeks, but raise the index as a separate ticket."""),
        ("u", "yes both. reader stays as is"),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/envs/prod/rds.tf",
                  "old": "  writer_instance_class   = \"db.r6g.xlarge\"",
                  "new": "  writer_instance_class   = \"db.r6g.2xlarge\" # month-end CPU peaks ~91% (CLM-2475)"}),
        ("r", "Replaced 1 occurrence in infra/terraform/envs/prod/rds.tf"),
        run("terraform -chdir=infra/terraform/envs/prod plan -target=module.aurora -no-color | grep -E 'instance_class|apply_immediately|Plan:'"),
        ("r", """      ~ instance_class               = "db.r6g.xlarge" -> "db.r6g.2xlarge"
        apply_immediately            = false
Plan: 0 to add, 1 to change, 0 to destroy."""),
        ("a", "With apply_immediately = false the change waits for the maintenance window (Sunday 03:00-04:00 UTC), so there's no failover during business hours. The writer restart takes about 5-8 minutes; the reader keeps serving reads and the portal shows the 'saving is paused' banner."),
        *commit("prod aurora writer to db.r6g.2xlarge (CLM-2475)"),
        ("u", "ok. ticket for the index?"),
        ("a", "Opened CLM-2476: `CREATE INDEX CONCURRENTLY ix_reserves_claim_effective ON reserves (claim_id, effective_at)` as an Alembic migration with `postgresql_concurrently=True` outside a transaction, plus the EXPLAIN before and after from staging."),
    ),

    # O6 -- near-miss for pin-temporalio-sdk: other dependency versions
    session(
        "fastapi-sqlalchemy-bump",
        ("u", "renovate grouped MR !845: fastapi 0.112.2 -> 0.115.0, sqlalchemy 2.0.32 -> 2.0.35, pydantic 2.8.2 -> 2.9.2. pipeline red on claims-api"),
        run("cd services/claims_api && uv sync && pytest -q -x 2>&1 | tail -15"),
        ("r", """tests/api/test_claims.py::test_list_claims_pagination FAILED

    def test_list_claims_pagination(client):
        r = client.get("/claims", params={"page": 0, "size": 50})
>       assert r.status_code == 422
E       assert 200 == 422

tests/api/test_claims.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/api/test_claims.py::test_list_claims_pagination - assert 200 == 422
1 failed, 74 passed in 9.12s"""),
        read("services/claims_api/claims_api/api/claims.py"),
        ("r", """class Pagination(BaseModel):
    page: int = Field(1, ge=1)
    size: int = Field(25, le=100)


@router.get("/claims")
def list_claims(p: Pagination = Depends(), db: Session = Depends(get_db)):
    ..."""),
        ("a", """FastAPI 0.115 added proper support for Pydantic models as query parameter containers (`Query()` on a model). With `Depends()` on a BaseModel it now builds the params differently, and in this version the `ge=1` constraint on `page` isn't applied through `Depends`. So `page=0` sneaks through. The supported 0.115 way is `p: Annotated[Pagination, Query()]`, which validates the model as a whole. The other changes (sqlalchemy, pydantic) are patch-level and the rest of the suite passes."""),
        ("c", F, {"operation": "replace_string", "path": "services/claims_api/claims_api/api/claims.py",
                  "old": "def list_claims(p: Pagination = Depends(), db: Session = Depends(get_db)):",
                  "new": "def list_claims(p: Annotated[Pagination, Query()], db: Session = Depends(get_db)):"}),
        ("r", "Replaced 1 occurrence in services/claims_api/claims_api/api/claims.py"),
        run("cd services/claims_api && pytest -q 2>&1 | tail -2"),
        ("r", """...........................................................................
75 passed in 9.40s"""),
        ("u", "do the other services use Depends() models like that?"),
        run("grep -rn 'BaseModel.*= Depends()\\|: [A-Z][a-zA-Z]* = Depends()' services/*/ --include=*.py | grep -v tests | head"),
        ("r", """services/documents/documents/api/search.py:31:def search_documents(f: DocumentFilter = Depends(), db: Session = Depends(get_db)):
services/estimates/estimates/api/estimates.py:54:def list_estimates(p: Pagination = Depends(), db: Session = Depends(get_db)):"""),
        ("a", "Two more. Same change in both, then the suite for each."),
        run("cd services && for s in documents estimates; do (cd $s && pytest -q | tail -1); done"),
        ("r", """41 passed in 4.02s
23 passed in 2.91s"""),
        *commit("adapt query-model params for fastapi 0.115 (MR !845)"),
        ("a", "Pushed to the renovate branch, pipeline is green. temporalio isn't in this group because renovate has it disabled, so claim_workflows is unaffected."),
    ),
]

K_OTHER += [
    # O7 -- near-miss for fraud-siu-threshold: score reuse window, another attribute
    session(
        "fraud-score-reuse",
        ("u", "we call veritrace every time a claim is touched. finance says the invoice tripled. can we reuse scores? CLM-2483"),
        run("psql \"$CLAIMWISE_RO_URL\" -c \"select date_trunc('week', requested_at) wk, count(*) calls, count(distinct claim_id) claims from fraud_score_requests where requested_at > now() - interval '5 weeks' group by 1 order by 1;\""),
        ("r", """           wk           | calls  | claims
------------------------+--------+--------
 2024-08-26 00:00:00+00 |  4,102 |  1,377
 2024-09-02 00:00:00+00 |  4,388 |  1,410
 2024-09-09 00:00:00+00 | 12,960 |  1,455
 2024-09-16 00:00:00+00 | 13,411 |  1,392
 2024-09-23 00:00:00+00 | 13,870 |  1,431
(5 rows)"""),
        ("a", "About 9 calls per claim per week since 9 Sept, up from 3. That's when the portal started re-scoring on every note save (CLM-2430). The score only depends on claim facts (parties, vehicle, incident, payee), not on notes, so most of these calls are wasted."),
        read("services/claims_api/claims_api/fraud/scoring.py"),
        ("r", """async def get_score(claim: Claim, db: Session) -> FraudScore:
    payload = build_payload(claim)
    resp = await veritrace.score(payload)
    row = FraudScore(claim_id=claim.id, score=resp.score, model=resp.model_version)
    db.add(row)
    return row"""),
        ("a", """Plan:

1. Hash the payload we send (the inputs Veritrace sees) and store it next to the score.
2. If the latest score for the claim has the same input hash and is less than 72 hours old, return it without calling Veritrace.
3. Anything that changes the inputs (new party, payee bank details, vehicle) changes the hash and forces a fresh score, so we don't miss the classic "payee changed late" pattern.

72h because SIU asked that a score is never older than 3 days when a claim is settled."""),
        ("u", "makes sense, go"),
        ("c", F, {"operation": "replace_string", "path": "services/claims_api/claims_api/fraud/scoring.py",
                  "old": "async def get_score(claim: Claim, db: Session) -> FraudScore:\n    payload = build_payload(claim)\n",
                  "new": "REUSE_WINDOW = timedelta(hours=72)\n\n\nasync def get_score(claim: Claim, db: Session) -> FraudScore:\n    payload = build_payload(claim)\n    digest = payload_hash(payload)\n    latest = latest_score(db, claim.id)\n    if latest and latest.input_hash == digest and utcnow() - latest.created_at < REUSE_WINDOW:\n        return latest\n"}),
        ("r", "Replaced 1 occurrence in services/claims_api/claims_api/fraud/scoring.py"),
        run("cd services/claims_api && alembic revision -m 'fraud_scores.input_hash' && pytest tests/fraud -q"),
        ("r", """  Generating services/claims_api/migrations/versions/5a0e93c7b1d8_fraud_scores_input_hash.py ...  done
..............
14 passed in 2.20s"""),
        ("u", "wait does the router still use the latest score if we reuse"),
        ("a", "Yes: the router reads whatever `get_score` returns, and a reused row is the latest row by definition. Thresholds and bands in config/fraud.yaml are untouched."),
        *commit("CLM-2483 reuse veritrace score for 72h when inputs unchanged"),
    ),

    # O8 -- near-miss for estimate-reconcile-schedule: batch size / runtime of same job
    session(
        "reconcile-batch-size",
        ("u", "estimate reconcile lambda hit its timeout last night, 170 estimates pending. its getting slower every week"),
        run("aws logs filter-log-events --log-group-name /aws/lambda/claimwise-prod-estimate-reconcile --filter-pattern '?REPORT ?\"batch done\"' --start-time $(date -d '-1 day' +%s000) --query 'events[].message' --output text | tail -5"),
        ("r", """batch done n=200 fetched_ms=41022 reserves_ms=128840
batch done n=200 fetched_ms=39876 reserves_ms=131007
REPORT RequestId: 0d9f3c2e-71a4-4b2b-bf0a-88e1d4f6c013 Duration: 900000.00 ms Billed Duration: 900000 ms Memory Size: 1024 MB Max Memory Used: 611 MB
Status: timeout"""),
        ("a", "Each batch spends ~130s on reserves, and that's the slow part, not PanelPoint. It's one UPDATE per estimate, each in its own transaction. At 15 minutes (the Lambda maximum) we run out of time."),
        read("services/estimates/estimates/reconcile_reserves.py"),
        ("r", """BATCH_SIZE = 200


def apply_reserves(db, estimates):
    for est in estimates:
        with db.begin():
            db.execute(
                update(Reserve)
                .where(Reserve.claim_id == est.claim_id, Reserve.kind == "repair")
                .values(amount=est.total_gross, source="panelpoint", updated_at=func.now())
            )"""),
        ("a", """Two changes:

1. One transaction per batch with a single `UPDATE ... FROM (VALUES ...)` statement, instead of 200 round trips with a commit each.
2. Raise BATCH_SIZE to 500, since the fetch side is paged by PanelPoint at 500 anyway.

The Lambda timeout is already 900s, the maximum, so that's not a lever."""),
        ("u", "ok"),
        ("c", F, {"operation": "replace_string", "path": "services/estimates/estimates/reconcile_reserves.py",
                  "old": "BATCH_SIZE = 200\n\n\ndef apply_reserves(db, estimates):\n    for est in estimates:\n        with db.begin():\n            db.execute(\n                update(Reserve)\n                .where(Reserve.claim_id == est.claim_id, Reserve.kind == \"repair\")\n                .values(amount=est.total_gross, source=\"panelpoint\", updated_at=func.now())\n            )",
                  "new": "BATCH_SIZE = 500  # matches PanelPoint page size\n\n\ndef apply_reserves(db, estimates):\n    rows = values(column(\"claim_id\", String), column(\"amount\", Numeric), name=\"v\").data(\n        [(e.claim_id, e.total_gross) for e in estimates]\n    )\n    with db.begin():\n        db.execute(\n            update(Reserve)\n            .where(Reserve.claim_id == rows.c.claim_id, Reserve.kind == \"repair\")\n            .values(amount=rows.c.amount, source=\"panelpoint\", updated_at=func.now())\n        )"}),
        ("r", "Replaced 1 occurrence in services/estimates/estimates/reconcile_reserves.py"),
        run("cd services/estimates && pytest tests/test_reconcile_reserves.py -q && python scripts/bench_reserves.py --n 500"),
        ("r", """.....
5 passed in 1.31s
apply_reserves n=500: 1.84s (was 311.2s with per-row commits)"""),
        ("u", "lol. commit"),
        *commit("estimates: batch reserve updates in one statement, batch size 500"),
        ("a", "Committed. Manually invoking it now on the 170 pending ones would finish in well under a minute; say if you want that or prefer to wait for tonight's run."),
    ),

    # O9 -- near-miss for claims-api-local-port: portal dev port, documents-service port
    session(
        "portal-vite-proxy",
        ("u", "luis here. portal dev server cant upload docs locally, CORS error on POST /documents. i'm on vite default port"),
        read("portal/vite.config.ts"),
        ("r", """import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  server: {
    port: 5173,
    proxy: {
      "/api": { target: process.env.VITE_CLAIMS_API_URL, changeOrigin: true },
    },
  },
});"""),
        read("portal/src/api/documents.ts"),
        ("r", """const DOCS_BASE = "http://localhost:8000";

export async function uploadDocument(claimId: string, file: File) {
  const body = new FormData();
  body.append("file", file);
  return fetch(`${DOCS_BASE}/documents?claim_id=${claimId}`, { method: "POST", body, credentials: "include" });
}"""),
        ("a", """Uploads bypass the proxy: `documents.ts` calls documents-service directly on localhost:8000, so the browser sees a cross-origin request from :5173 to :8000 with credentials. documents-service only allows the deployed portal origins, so it's blocked.

Cleanest fix is to route uploads through the vite proxy like everything else: add a `/docs-api` proxy entry pointing at localhost:8000 and use a relative URL. That also matches prod, where the ALB routes `/docs-api` to documents-service."""),
        ("u", "yeah do that"),
        ("c", F, {"operation": "replace_string", "path": "portal/vite.config.ts",
                  "old": "      \"/api\": { target: process.env.VITE_CLAIMS_API_URL, changeOrigin: true },",
                  "new": "      \"/api\": { target: process.env.VITE_CLAIMS_API_URL, changeOrigin: true },\n      \"/docs-api\": { target: \"http://localhost:8000\", changeOrigin: true, rewrite: (p) => p.replace(/^\\/docs-api/, \"\") },"}),
        ("r", "Replaced 1 occurrence in portal/vite.config.ts"),
        ("c", F, {"operation": "replace_string", "path": "portal/src/api/documents.ts",
                  "old": "const DOCS_BASE = \"http://localhost:8000\";",
                  "new": "const DOCS_BASE = \"/docs-api\";"}),
        ("r", "Replaced 1 occurrence in portal/src/api/documents.ts"),
        run("cd portal && npm run test -- --run src/api && npm run typecheck"),
        ("r", """ RUN  v2.0.5 /repo/portal
 ok src/api/documents.test.ts (3 tests) 41ms
 ok src/api/claims.test.ts (6 tests) 58ms
 Test Files  2 passed (2)
      Tests  9 passed (9)

> portal@0.0.0 typecheck
> tsc --noEmit"""),
        ("u", "upload works now. commit pls"),
        *commit("portal: proxy document uploads through vite like prod ALB"),
        ("a", "Committed. The documents-service CORS list is unchanged, so nothing else needs a localhost origin."),
    ),

    # O10 -- near-miss for pdf-splitter-lambda-memory: timeout + ephemeral storage of same lambda
    session(
        "splitter-timeout-ephemeral",
        ("u", "pdf-splitter timing out on the insurer-bundle uploads from the broker portal. Task timed out after 300.00 seconds. CLM-2452"),
        read("infra/terraform/modules/pdf_splitter/main.tf"),
        ("r", """resource "aws_lambda_function" "pdf_splitter" {
  function_name = "claimwise-${var.env}-pdf-splitter"
  runtime       = "python3.12"
  handler       = "handler.handler"
  memory_size   = 1024
  timeout       = 300
  layers        = [var.pikepdf_layer_arn]
}"""),
        run("aws logs insights --log-group /aws/lambda/claimwise-prod-pdf-splitter --query 'filter @type=\"REPORT\" | stats pct(@duration,50) as p50, pct(@duration,99) as p99, max(@duration) as mx by bin(7d)' --since 14d"),
        ("r", """bin(7d)               p50        p99         mx
2024-09-09 00:00      8,411      171,330     264,909
2024-09-16 00:00      9,002      236,118     300,000"""),
        ("a", """p99 went from ~171s to ~236s in a week and the max hit the 300s ceiling. These broker bundles are 150-250 pages of multi-part scans, and most of the time is the S3 upload of each part. Two changes:

1. timeout 300 -> 600. Lambda allows 900, but the DocumentIntake workflow waits on the split, and 10 minutes is plenty for the biggest bundle we've seen.
2. Add `ephemeral_storage` 2048 MB. The default /tmp is 512 MB, and the streaming rewrite someone will eventually do needs room to spill the source PDF to disk."""),
        ("u", "ok but dont touch memory in this MR, i want to see the timeout effect on its own"),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/modules/pdf_splitter/main.tf",
                  "old": "  timeout       = 300\n  layers        = [var.pikepdf_layer_arn]",
                  "new": "  timeout       = 600 # CLM-2452 broker bundles\n  ephemeral_storage {\n    size = 2048\n  }\n  layers = [var.pikepdf_layer_arn]"}),
        ("r", "Replaced 1 occurrence in infra/terraform/modules/pdf_splitter/main.tf"),
        run("terraform -chdir=infra/terraform/envs/prod plan -target=module.pdf_splitter -no-color | grep -E '~|\\+|Plan:'"),
        ("r", """  ~ resource "aws_lambda_function" "pdf_splitter" {
      ~ timeout                        = 300 -> 600
      + ephemeral_storage {
          + size = 2048
        }
Plan: 0 to add, 1 to change, 0 to destroy."""),
        *commit("pdf-splitter: timeout 600s and 2GB ephemeral storage (CLM-2452)"),
        ("u", "thx"),
        ("a", "Memory is untouched as asked. I'll compare p99 duration a week after this ships."),
    ),

    # O11 -- near-miss for temporal-reset-stuck-workflow: terminate on STAGING
    session(
        "temporal-terminate-staging-loadtest",
        ("u", "mei lin's load test left ~3k ClaimLifecycle workflows running on staging, they're eating worker slots. kill them"),
        run("temporal workflow count --namespace claimwise-staging --query 'WorkflowType=\"ClaimLifecycle\" AND ExecutionStatus=\"Running\" AND LoadTestRun=\"lt-2024-10-03\"'"),
        ("r", "Total: 3012"),
        ("a", "3012 match the load test's search attribute `LoadTestRun=\"lt-2024-10-03\"`. Anything without that attribute (real staging test claims) won't be touched. Terminating is right here, not cancel: cancel would run the compensation logic (reserve release, notification emails to fake adjusters) 3012 times."),
        ("u", "yep terminate"),
        run("temporal workflow terminate --namespace claimwise-staging --query 'WorkflowType=\"ClaimLifecycle\" AND ExecutionStatus=\"Running\" AND LoadTestRun=\"lt-2024-10-03\"' --reason 'cleanup after load test lt-2024-10-03' --yes"),
        ("r", """Start batch against approximately 3012 workflow(s)
Started batch for job ID: d07a41f2-5c6e-4b88-9e1a-2f3c0b7d6a55"""),
        run("sleep 30 && temporal batch describe --namespace claimwise-staging --job-id d07a41f2-5c6e-4b88-9e1a-2f3c0b7d6a55"),
        ("r", """  State                  Completed
  TotalOperationCount    3012
  CompleteOperationCount 3012
  FailureOperationCount  0"""),
        ("a", "All 3012 terminated. Worker slot usage on claim-workers-staging should drop within a minute."),
        ("u", "can you add that to the load test README so she can do it herself next time"),
        read("loadtest/README.md"),
        ("r", """# Claim lifecycle load test

Runs k6 against claims-api on staging. Each run tags workflows with the LoadTestRun search attribute.

## Running
    k6 run -e RUN_ID=lt-$(date +%F) loadtest/claim_lifecycle.js
"""),
        ("c", F, {"operation": "replace_string", "path": "loadtest/README.md",
                  "old": "    k6 run -e RUN_ID=lt-$(date +%F) loadtest/claim_lifecycle.js\n",
                  "new": "    k6 run -e RUN_ID=lt-$(date +%F) loadtest/claim_lifecycle.js\n\n## Cleanup (staging only!)\n    temporal workflow terminate --namespace claimwise-staging \\\n      --query 'ExecutionStatus=\"Running\" AND LoadTestRun=\"<RUN_ID>\"' --reason 'load test cleanup' --yes\n\nUse terminate, not cancel, so compensation activities don't run.\n"}),
        ("r", "Replaced 1 occurrence in loadtest/README.md"),
        *commit("loadtest: document staging workflow cleanup"),
    ),

    # O12 -- near-miss for brackenridge-stp-limit: other attributes of same customer, other customer
    session(
        "fleet-policy-import",
        ("u", "CS-322 importing fleet vehicle schedules for brackenridge and orchard vale hire, csvs from the broker in data/imports/. importer chokes on orchard vale's file"),
        run("python -m claims_api.tools.import_fleet data/imports/orchard_vale_hire_2024-10.csv --account orchard-vale-hire --dry-run 2>&1 | tail -6"),
        ("r", """reading data/imports/orchard_vale_hire_2024-10.csv (encoding=utf-8)
Traceback (most recent call last):
  File "/repo/services/claims_api/claims_api/tools/import_fleet.py", line 44, in read_rows
    for row in csv.DictReader(f):
UnicodeDecodeError: 'utf-8' codec can't decode byte 0xa3 in position 2211: invalid start byte"""),
        ("a", "0xa3 is the pound sign in Windows-1252: their broker exported from Excel without UTF-8. Brackenridge's file is UTF-8, so the importer needs to accept an encoding flag or sniff it."),
        run("file data/imports/*.csv && head -2 data/imports/brackenridge_logistics_2024-10.csv"),
        ("r", """data/imports/brackenridge_logistics_2024-10.csv: UTF-8 Unicode text
data/imports/orchard_vale_hire_2024-10.csv:       ISO-8859 text, with CRLF line terminators
policy_number,vrm,make,model,year,excess_gbp
BRK-FL-000118,LK21 XMP,Ford,Transit Custom,2021,250"""),
        ("c", F, {"operation": "replace_string", "path": "services/claims_api/claims_api/tools/import_fleet.py",
                  "old": "    with open(path, newline=\"\", encoding=\"utf-8\") as f:",
                  "new": "    raw = Path(path).read_bytes()\n    enc = \"utf-8\" if is_utf8(raw) else \"cp1252\"\n    with open(path, newline=\"\", encoding=enc) as f:"}),
        ("r", "Replaced 1 occurrence in services/claims_api/claims_api/tools/import_fleet.py"),
        run("for a in brackenridge-logistics orchard-vale-hire; do python -m claims_api.tools.import_fleet data/imports/${a//-/_}_2024-10.csv --account $a --dry-run | tail -2; done"),
        ("r", """brackenridge-logistics: 1,212 vehicles, policy prefix BRK-FL-, excess_gbp {250: 1,212}, 0 errors
dry run, nothing written
orchard-vale-hire: 386 vehicles, policy prefix OVH-FL-, excess_gbp {500: 351, 1000: 35}, 2 errors
  row 118: duplicate vrm YD19 KPL (also row 117)
  row 240: year '20 19' not an integer"""),
        ("a", "Encoding is fixed. Brackenridge is clean: 1,212 vehicles, all GBP 250 excess. Orchard Vale has 386 vehicles with GBP 500 excess (35 minibuses at GBP 1000) and two bad rows: a duplicated registration and a typo'd year. Those need the broker to correct them; I wouldn't guess."),
        ("u", "import brackenridge for real, hold orchard vale till the broker fixes the rows"),
        run("python -m claims_api.tools.import_fleet data/imports/brackenridge_logistics_2024-10.csv --account brackenridge-logistics | tail -1"),
        ("r", "brackenridge-logistics: imported 1,212 vehicles (inserted 37, updated 1,175)"),
        *commit("import_fleet: detect cp1252 broker exports (CS-322)"),
        ("a", "Brackenridge imported: 37 new vehicles, 1,175 updated. I've drafted the email to the Orchard Vale broker listing rows 118 and 240."),
    ),
]

K_OTHER += [
    # O13 -- datadog monitor for claims-api latency
    session(
        "datadog-claims-api-latency-monitor",
        ("u", "we got no alert when claims-api p95 went to 4s yesterday afternoon. theres a monitor isnt there?"),
        run("grep -n -A14 'claims_api_latency' infra/terraform/envs/prod/monitors.tf"),
        ("r", """31:resource "datadog_monitor" "claims_api_latency" {
32:  name    = "[claimwise prod] claims-api p95 latency"
33:  type    = "query alert"
34:  query   = "avg(last_15m):p95:trace.fastapi.request{service:claims-api,env:prod} > 2"
35:  message = "claims-api p95 over 2s @slack-claimwise-alerts"
36:  monitor_thresholds {
37:    critical = 2
38:    warning  = 1.2
39:  }
40:  notify_no_data    = false
41:  require_full_window = true
42:  tags = ["team:claimwise", "service:claims-api"]
43:}"""),
        run("dd-monitor history 'claims-api p95 latency' --from '2024-10-02T12:00Z' --to '2024-10-02T18:00Z'"),
        ("r", """2024-10-02T13:58Z  OK      value=0.41
2024-10-02T14:13Z  NO DATA
2024-10-02T16:46Z  OK      value=0.52"""),
        ("a", """The monitor went to NO DATA at 14:13 and stayed there for 2.5 hours, and with `notify_no_data = false` nobody heard. The metric name is the reason: the monitor queries `trace.fastapi.request`, but after last week's ddtrace upgrade to 2.x the root span of ASGI apps is named `http.server.request`, so the metric became `trace.http.server.request`. The old query has matched nothing since that deploy. The 4s spike happened during the blind spot."""),
        ("u", "ugh. fix the query and turn on no data alerts"),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/envs/prod/monitors.tf",
                  "old": "  query   = \"avg(last_15m):p95:trace.fastapi.request{service:claims-api,env:prod} > 2\"",
                  "new": "  query   = \"avg(last_15m):p95:trace.http.server.request{service:claims-api,env:prod} > 2\""}),
        ("r", "Replaced 1 occurrence in infra/terraform/envs/prod/monitors.tf"),
        ("c", F, {"operation": "replace_string", "path": "infra/terraform/envs/prod/monitors.tf",
                  "old": "  notify_no_data    = false\n",
                  "new": "  notify_no_data    = true\n  no_data_timeframe = 30\n"}),
        ("r", "Replaced 1 occurrence in infra/terraform/envs/prod/monitors.tf"),
        run("grep -c 'trace.fastapi.request' infra/terraform/envs/*/monitors.tf"),
        ("r", """infra/terraform/envs/prod/monitors.tf:2
infra/terraform/envs/staging/monitors.tf:3"""),
        ("a", "Five more monitors (error rate and apdex, prod and staging) use the old span name. Changing all of them in the same commit."),
        run("sed -i 's/trace\\.fastapi\\.request/trace.http.server.request/g' infra/terraform/envs/prod/monitors.tf infra/terraform/envs/staging/monitors.tf && terraform -chdir=infra/terraform/envs/prod plan -no-color | grep Plan:"),
        ("r", "Plan: 0 to add, 3 to change, 0 to destroy."),
        *commit("datadog: follow ddtrace 2.x span rename in monitors, alert on no data"),
        ("a", "Committed. After the apply, the latency monitor should show a value again within 15 minutes; I'll check it's out of NO DATA."),
    ),

    # O14 -- flaky test fix
    session(
        "flaky-adjuster-assignment-test",
        ("u", "test_assign_round_robin flaky again on main, failed 3 of the last 10 pipelines. mei lin says its not her"),
        run("cd services/claims_api && for i in $(seq 1 20); do pytest tests/assignment/test_round_robin.py -q -p no:randomly 2>&1 | tail -1; done | sort | uniq -c"),
        ("r", """     20 4 passed in 0.61s"""),
        run("cd services/claims_api && for i in $(seq 1 20); do pytest tests/assignment/test_round_robin.py -q 2>&1 | tail -1; done | sort | uniq -c"),
        ("r", """      6 1 failed, 3 passed in 0.66s
     14 4 passed in 0.63s"""),
        ("a", "It only fails with pytest-randomly's ordering, so the tests share state. Looking at the module."),
        read("services/claims_api/claims_api/assignment/round_robin.py"),
        ("r", """from itertools import cycle

_ADJUSTER_CYCLES: dict[str, "cycle[str]"] = {}


def next_adjuster(team: str, adjusters: list[str]) -> str:
    if team not in _ADJUSTER_CYCLES:
        _ADJUSTER_CYCLES[team] = cycle(adjusters)
    return next(_ADJUSTER_CYCLES[team])"""),
        ("a", """Module-level `_ADJUSTER_CYCLES` survives between tests, so whichever test runs first for team "motor-north" decides where the cycle is when the next one starts. It's also a real bug, not just a test issue: in prod each ECS task has its own cycle, so with 3 claims-api tasks "round robin" is only per task, and if the adjuster list changes the old cycle is kept until restart.

Proper fix: keep the pointer in Postgres (`assignment_cursor` per team, `SELECT ... FOR UPDATE`). Quick fix for the flake: an autouse fixture that clears the dict."""),
        ("u", "do the proper one, the per-task thing explains the complaints from motor-north"),
        ("c", F, {"operation": "create_file", "path": "services/claims_api/claims_api/assignment/round_robin.py",
                  "content": "from sqlalchemy import select\n\nfrom claims_api.models import AssignmentCursor\n\n\ndef next_adjuster(db, team: str, adjusters: list[str]) -> str:\n    cur = db.execute(select(AssignmentCursor).where(AssignmentCursor.team == team).with_for_update()).scalar_one_or_none()\n    if cur is None:\n        cur = AssignmentCursor(team=team, position=0)\n        db.add(cur)\n    chosen = sorted(adjusters)[cur.position % len(adjusters)]\n    cur.position += 1\n    return chosen\n"}),
        ("r", "Created services/claims_api/claims_api/assignment/round_robin.py"),
        run("cd services/claims_api && alembic revision --autogenerate -m 'assignment cursor' | tail -1 && for i in $(seq 1 20); do pytest tests/assignment -q 2>&1 | tail -1; done | sort | uniq -c"),
        ("r", """  Generating services/claims_api/migrations/versions/c41d8a2e6f07_assignment_cursor.py ...  done
     20 5 passed in 0.94s"""),
        *commit("assignment: persist round-robin cursor per team (fixes flaky test and per-task cycles)"),
        ("u", "nice"),
        ("a", "I added one test that simulates two tasks sharing the DB cursor; that's the 5th test."),
    ),

    # O15 -- GitLab CI cache trouble
    session(
        "gitlab-ci-uv-cache",
        ("u", "CI takes 9 min just installing deps on every job since we moved to uv. the cache isnt doing anything?"),
        read(".gitlab-ci.yml"),
        ("r", """default:
  image: registry.gitlab.com/harrowgate/claimwise/ci-python:3.12
  cache:
    key: uv-$CI_COMMIT_REF_SLUG
    paths:
      - .cache/uv
  before_script:
    - uv sync --frozen

test:claims-api:
  stage: test
  script:
    - cd services/claims_api && uv run pytest -q"""),
        run("gitlab-ci-log --project harrowgate/claimwise --job 88412931 | grep -iE 'cache|uv sync' | head -8"),
        ("r", """Checking cache for uv-main-protected...
No URL provided, cache will not be downloaded from shared cache server. Instead a local version of cache will be extracted.
Successfully extracted cache
$ uv sync --frozen
Resolved 212 packages in 14ms
Downloading 212 packages ...
Saving cache for successful job
Creating cache uv-main-protected...
WARNING: .cache/uv: no matching files"""),
        ("a", """Two problems:

1. uv doesn't write to `.cache/uv` unless told to. By default it uses `~/.cache/uv` outside the project dir, and GitLab can only cache paths inside the build dir. So the cache is always empty ("no matching files").
2. "No URL provided ... shared cache server": the runners have no distributed cache configured, so even a correct cache only helps if the same runner picks up the next job.

Fix (1) with `UV_CACHE_DIR: .cache/uv` and `uv cache prune --ci` at the end. (2) is a runner config thing for Tomasz: an S3 cache bucket for the autoscaling runners."""),
        ("u", "do 1, i'll ping tomasz for 2"),
        ("c", F, {"operation": "replace_string", "path": ".gitlab-ci.yml",
                  "old": "default:\n  image: registry.gitlab.com/harrowgate/claimwise/ci-python:3.12\n  cache:\n    key: uv-$CI_COMMIT_REF_SLUG",
                  "new": "variables:\n  UV_CACHE_DIR: .cache/uv\n  UV_LINK_MODE: copy\n\ndefault:\n  image: registry.gitlab.com/harrowgate/claimwise/ci-python:3.12\n  cache:\n    key:\n      files: [uv.lock]\n      prefix: uv"}),
        ("r", "Replaced 1 occurrence in .gitlab-ci.yml"),
        ("c", F, {"operation": "replace_string", "path": ".gitlab-ci.yml",
                  "old": "  before_script:\n    - uv sync --frozen\n",
                  "new": "  before_script:\n    - uv sync --frozen\n  after_script:\n    - uv cache prune --ci\n"}),
        ("r", "Replaced 1 occurrence in .gitlab-ci.yml"),
        *commit("ci: point uv cache into the build dir, key cache on uv.lock"),
        ("u", "second pipeline run: 'Resolved 212 packages, Prepared 0 packages, Installed 212 packages in 1.9s'. so thats it working?"),
        ("a", "That's the cache working: nothing downloaded, just linked from cache. Keying on uv.lock instead of the branch also means MR branches reuse main's cache until the lock changes."),
    ),

    # O16 -- portal feature: claim status filter
    session(
        "portal-claim-status-filter",
        ("u", "CLM-2466 adjusters want to filter their claim list by status (open, awaiting docs, awaiting estimate, in SIU, settled) and have it stick when they come back"),
        read("portal/src/pages/ClaimList.tsx"),
        ("r", """export function ClaimList() {
  const { data, isLoading } = useQuery({ queryKey: ["claims"], queryFn: () => api.listClaims() });
  if (isLoading) return <Spinner />;
  return (
    <Table>
      {data!.items.map((c) => <ClaimRow key={c.id} claim={c} />)}
    </Table>
  );
}"""),
        run("curl -s 'localhost:5173/api/claims?status=awaiting_docs&size=2' -b dev-cookies.txt | jq '.items[].status, .total'"),
        ("r", """"awaiting_docs"
"awaiting_docs"
37"""),
        ("a", "The API already supports `?status=` (multi-valued), so this is portal-only. I'll keep the filter in the URL (`?status=awaiting_docs,in_siu`) so it survives reloads and can be shared, and mirror the last choice into localStorage so it comes back when they open the list from the nav."),
        ("c", F, {"operation": "replace_string", "path": "portal/src/pages/ClaimList.tsx",
                  "old": "export function ClaimList() {\n  const { data, isLoading } = useQuery({ queryKey: [\"claims\"], queryFn: () => api.listClaims() });",
                  "new": "export function ClaimList() {\n  const [statuses, setStatuses] = usePersistedStatusFilter(\"claimList.status\");\n  const { data, isLoading } = useQuery({\n    queryKey: [\"claims\", statuses],\n    queryFn: () => api.listClaims({ status: statuses }),\n  });"}),
        ("r", "Replaced 1 occurrence in portal/src/pages/ClaimList.tsx"),
        ("c", F, {"operation": "create_file", "path": "portal/src/hooks/usePersistedStatusFilter.ts",
                  "content": "import { useSearchParams } from \"react-router-dom\";\n\nexport function usePersistedStatusFilter(storageKey: string) {\n  const [params, setParams] = useSearchParams();\n  const fromUrl = params.get(\"status\");\n  const value = (fromUrl ?? localStorage.getItem(storageKey) ?? \"\").split(\",\").filter(Boolean);\n  const set = (next: string[]) => {\n    localStorage.setItem(storageKey, next.join(\",\"));\n    setParams((p) => { next.length ? p.set(\"status\", next.join(\",\")) : p.delete(\"status\"); return p; });\n  };\n  return [value, set] as const;\n}\n"}),
        ("r", "Created portal/src/hooks/usePersistedStatusFilter.ts"),
        run("cd portal && npm run test -- --run src/pages/ClaimList src/hooks"),
        ("r", """ ok src/hooks/usePersistedStatusFilter.test.ts (4 tests) 22ms
 ok src/pages/ClaimList.test.tsx (5 tests) 140ms
 Test Files  2 passed (2)
      Tests  9 passed (9)"""),
        ("u", "hmm the 'in SIU' one should only show for team leads, adjusters arent supposed to see SIU flags"),
        ("a", "Right, the API hides SIU status from plain adjusters anyway (it returns those claims as `open`), so the chip would just show an empty list for them. I'll render the chip only when `user.roles` includes `team_lead`."),
        ("c", F, {"operation": "replace_string", "path": "portal/src/pages/ClaimList.tsx",
                  "old": "  const [statuses, setStatuses] = usePersistedStatusFilter(\"claimList.status\");",
                  "new": "  const [statuses, setStatuses] = usePersistedStatusFilter(\"claimList.status\");\n  const { user } = useSession();\n  const options = STATUS_OPTIONS.filter((o) => o.value !== \"in_siu\" || user.roles.includes(\"team_lead\"));"}),
        ("r", "Replaced 1 occurrence in portal/src/pages/ClaimList.tsx"),
        *commit("CLM-2466 portal: persisted status filter on claim list"),
    ),

    # O17 -- textract result handler bug (same area as splitter, no memory figures)
    session(
        "textract-result-handler-multipage",
        ("u", "some OCR results only have the first 1000 blocks. claim 88-411-0988, the repair invoice page 3 is just missing from the extracted text"),
        read("lambdas/textract_result_handler/handler.py"),
        ("r", """import json

import boto3

textract = boto3.client("textract")


def handler(event, context):
    for record in event["Records"]:
        note = json.loads(json.loads(record["body"])["Message"])
        job_id = note["JobId"]
        resp = textract.get_document_analysis(JobId=job_id)
        blocks = resp["Blocks"]
        store_blocks(note["JobTag"], blocks)"""),
        ("a", "There it is: `get_document_analysis` returns at most 1000 blocks per call and a `NextToken` if there are more. The handler only reads the first page of results. A 3-page invoice with tables easily passes 1000 blocks, so the tail gets dropped silently."),
        run("aws textract get-document-analysis --job-id 4f0c9a1e2b7d45e8a9f3c1d2e6b08a77 --max-results 1000 --query '{n:length(Blocks),next:NextToken!=null}'"),
        ("r", """{
    "n": 1000,
    "next": true
}"""),
        ("c", F, {"operation": "replace_string", "path": "lambdas/textract_result_handler/handler.py",
                  "old": "        resp = textract.get_document_analysis(JobId=job_id)\n        blocks = resp[\"Blocks\"]",
                  "new": "        blocks, token = [], None\n        while True:\n            kwargs = {\"JobId\": job_id, \"MaxResults\": 1000}\n            if token:\n                kwargs[\"NextToken\"] = token\n            resp = textract.get_document_analysis(**kwargs)\n            blocks.extend(resp[\"Blocks\"])\n            token = resp.get(\"NextToken\")\n            if not token:\n                break"}),
        ("r", "Replaced 1 occurrence in lambdas/textract_result_handler/handler.py"),
        run("pytest lambdas/textract_result_handler -q"),
        ("r", """....
4 passed in 0.52s"""),
        ("u", "how many other claims got truncated"),
        run("psql \"$CLAIMWISE_RO_URL\" -c \"select count(distinct claim_id) from ocr_results where block_count = 1000 and created_at > '2024-06-01';\""),
        ("r", """ count
-------
   214
(1 row)"""),
        ("a", "214 claims since June have exactly 1000 blocks, which is the truncation signature. After deploy I can re-fetch their Textract results: the job ids are stored, but Textract only keeps async results for 7 days, so anything older needs a fresh OCR run. That's about 190 of the 214."),
        ("u", "ok add a test with a 2500 block fake response and commit, we'll do the re-run tomorrow"),
        *commit("textract-result-handler: paginate GetDocumentAnalysis (dropped blocks past 1000)"),
    ),

    # O18 -- code review: payout rounding
    session(
        "payout-rounding-review",
        ("u", "review dana's MR !851 (partial payout split between policyholder and finance house) pls. finance is paranoid about pennies"),
        run("git diff main...dana/clm-2471-split-payout -- services/claims_api/claims_api/settlement/split.py"),
        ("r", """+def split_payout(total: Decimal, finance_share: Decimal) -> tuple[Decimal, Decimal]:
+    \"\"\"finance_share is a fraction 0..1 of the total owed to the finance house.\"\"\"
+    to_finance = round(total * finance_share, 2)
+    to_holder = round(total * (1 - finance_share), 2)
+    return to_holder, to_finance"""),
        ("a", """Main issue: both halves are rounded independently, so they don't always add up to the total. Example: total 100.01, share 0.5 -> 50.005 and 50.005, and `round()` on Decimal uses ROUND_HALF_EVEN, giving 50.00 + 50.00 = 100.00. A penny vanishes. With other values you can get a penny too many.

Suggestions for the review:
1. Round one side only, and derive the other as `total - to_finance`, so the sum is exact by construction.
2. Round with an explicit `quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)` rather than `round()`, to match how the finance system rounds (their spec says half-up).
3. Validate `0 <= finance_share <= 1` and raise otherwise.
4. Add a hypothesis test: for random totals and shares, `to_holder + to_finance == total`."""),
        run("cd services/claims_api && python -c \"from decimal import Decimal as D; from claims_api.settlement.split import split_payout as s; print(s(D('100.01'), D('0.5')), sum(s(D('100.01'), D('0.5'))))\""),
        ("r", "(Decimal('50.00'), Decimal('50.00')) 100.00"),
        ("u", "yep thats exactly what finance will yell about. post the review"),
        run("glab mr note 851 --message \"$(cat /tmp/review_851.md)\""),
        ("r", "Created note 1734229 on !851"),
        ("a", "Posted, with the 100.01 repro. I marked the independent rounding as blocking and the hypothesis test as a strong suggestion."),
        ("u", "dana pushed a fix, rerun the repro"),
        run("git fetch -q && git checkout -q dana/clm-2471-split-payout && cd services/claims_api && python -c \"from decimal import Decimal as D; from claims_api.settlement.split import split_payout as s; print(s(D('100.01'), D('0.5')), sum(s(D('100.01'), D('0.5'))))\" && pytest tests/settlement -q | tail -1"),
        ("r", """(Decimal('50.00'), Decimal('50.01')) 100.01
18 passed in 3.40s"""),
        ("a", "Sums to the total now, and her hypothesis test is in the 18. The odd penny goes to the finance house, which is what the finance house agreement says. Approving."),
    ),
]

K_PROBES = [
    # same
    {"text": "whats the start_to_close timeout on the textract ocr activity now? big medical bundles timing out again", "kind": "same", "session": "ocr-activity-timeout", "needles": ["14 minutes"]},
    {"text": "where's the panelpoint webhook hmac secret for prod stored", "kind": "same", "session": "panelpoint-webhook-secret", "needles": ["claimwise/prod/panelpoint/webhook-hmac"]},
    {"text": "remind me the staging db host, need to run alembic current against it", "kind": "same", "session": "rds-staging-host", "needles": ["claimwise-stg.cluster-c8xq2lmv4kfa"]},
    {"text": "what time does the panelpoint estimate reconciliation run? corin is asking again", "kind": "same", "session": "estimate-reconcile-schedule", "needles": ["02:15"]},
    {"text": "which port is claims-api on locally, documents-service has 8000 right", "kind": "same", "session": "claims-api-local-port", "needles": ["8071"]},
    {"text": "nondeterminism error after deploy again, ClaimLifecycle workflows stuck. what was the temporal workflow reset command we used last time?", "kind": "same", "session": "temporal-reset-stuck-workflow", "needles": ["FirstWorkflowTask"]},
    # reworded
    {"text": "the risk-rating supplier gives us blanks though their dashboard looks fine - who's the named person over there we go to?", "kind": "reworded", "session": "veritrace-escalation-contact", "needles": ["Nadia Brandt"]},
    {"text": "adjusters were seeing the same upload entry posted two or three times on a file. what did we change to stop that", "kind": "reworded", "session": "sqs-duplicate-notes", "needles": ["540"]},
    {"text": "which release of the workflow engine's python library are we stuck on, and what stops us upgrading?", "kind": "reworded", "session": "pin-temporalio-sdk", "needles": ["1.7.1"]},
    {"text": "above what suspicion rating does a private car case get handed to the investigators", "kind": "reworded", "session": "fraud-siu-threshold", "needles": ["0.82"]},
    {"text": "the job that cuts up enormous uploads kept dying from lack of RAM - what figure did we settle on?", "kind": "reworded", "session": "pdf-splitter-lambda-memory", "needles": ["3008"]},
    {"text": "up to what amount does that haulage firm get paid out automatically, with no human looking at it?", "kind": "reworded", "session": "brackenridge-stp-limit", "needles": ["4750"]},
    # unrelated: everyday turns
    {"text": "ok go ahead", "kind": "unrelated"},
    {"text": "same error again", "kind": "unrelated"},
    {"text": "hmm no, revert that last change", "kind": "unrelated"},
    # unrelated: new work sharing topic words
    {"text": "add a datadog dashboard for textract job durations broken down by page count", "kind": "unrelated"},
    {"text": "write an alembic migration adding claims.salvage_value numeric(12,2), nullable", "kind": "unrelated"},
    {"text": "CLM-2530 adjuster portal: add a csv export button to the claim list that respects the current filters", "kind": "unrelated"},
    # unrelated: near-miss questions (sibling of a settled fact, not answered anywhere)
    {"text": "whats the start_to_close timeout on the fraud scoring activity?", "kind": "unrelated"},
    {"text": "where's the veritrace api key for prod kept", "kind": "unrelated"},
    {"text": "remind me the prod aurora reader endpoint, need to point a report at it", "kind": "unrelated"},
    {"text": "what's the SIU referral threshold for the commercial fleet line?", "kind": "unrelated"},
    {"text": "how much memory does the textract-result-handler lambda have", "kind": "unrelated"},
    {"text": "whats orchard vale hire's straight-through settlement limit? broker is asking", "kind": "unrelated"},
]
