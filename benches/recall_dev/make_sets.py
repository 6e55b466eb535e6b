"""Writes set_a.json .. set_l.json from the sessions in sets_a.py .. sets_l.py (hand-written for
clio; no public data).

Shorthand: ("u", text) a user message; ("c", tool, {args}) an assistant tool call, followed by
("r", result) its result; ("a", text) an assistant reply. Run: python benches/recall_dev/make_sets.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent


def write(name: str, project: str, fact: list[dict[str, Any]], other: list[dict[str, Any]], probes: list[dict[str, Any]]) -> None:
    sessions: list[dict[str, Any]] = []
    rest = list(other)
    for i, s in enumerate(fact):  # a fact session every two or three sessions of other work
        take = 2 if i % 2 else 1
        sessions += rest[:take]
        rest = rest[take:]
        sessions.append(s)
    sessions += rest
    data = {"project": project, "sessions": sessions, "probes": probes}
    (HERE / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


from sets_a import A_FACT, A_OTHER, A_PROBES  # noqa: E402
from sets_b import B_FACT, B_OTHER, B_PROBES  # noqa: E402
from sets_c import C_FACT, C_OTHER, C_PROBES  # noqa: E402
from sets_d import D_FACT, D_OTHER, D_PROBES  # noqa: E402
from sets_e import E_FACT, E_OTHER, E_PROBES  # noqa: E402
from sets_f import F_FACT, F_OTHER, F_PROBES  # noqa: E402
from sets_g import G_FACT, G_OTHER, G_PROBES  # noqa: E402
from sets_h import H_FACT, H_OTHER, H_PROBES  # noqa: E402
from sets_i import I_FACT, I_OTHER, I_PROBES  # noqa: E402
from sets_j import J_FACT, J_OTHER, J_PROBES  # noqa: E402
from sets_k import K_FACT, K_OTHER, K_PROBES  # noqa: E402
from sets_l import L_FACT, L_OTHER, L_PROBES  # noqa: E402

if __name__ == "__main__":
    write("set_a", "invoicing SaaS: Django, Celery, PostgreSQL, Redis, React", A_FACT, A_OTHER, A_PROBES)
    write("set_b", "event pipeline: Go services, Kafka, ClickHouse, Terraform, Kubernetes", B_FACT, B_OTHER, B_PROBES)
    write("set_c", "ML training repo: PyTorch Lightning, Airflow, MLflow, DVC, Slurm, Triton", C_FACT, C_OTHER, C_PROBES)
    write("set_d", "thermostat firmware: Rust no_std on ESP32-C3 (esp-hal, embassy), MQTT, thermoctl CLI", D_FACT, D_OTHER, D_PROBES)
    write("set_e", "mobile app backend and admin: TypeScript, NestJS API, Prisma on PostgreSQL, React Native (Expo) app, Stripe, FCM push, GitHub Actions, Fly.io", E_FACT, E_OTHER, E_PROBES)
    write("set_f", "shipment tracking monolith for a logistics company: Spring Boot (Java/Kotlin), Gradle, Oracle + Flyway, RabbitMQ, Keycloak, Vue 3, Jenkins, OpenShift", F_FACT, F_OTHER, F_PROBES)
    write("set_g", "clinic appointment booking: Ruby on Rails 7 monolith (Ruby 3.3), Sidekiq on Redis, PostgreSQL 16, Hotwire/Turbo, RSpec, FHIR R4 integration with the clinics' EHRs, Twilio SMS reminders, Kamal on Hetzner, GitHub Actions, Sentry", G_FACT, G_OTHER, G_PROBES)
    write("set_h", "online shop for a furniture retailer: PHP 8.3 / Laravel 11, MySQL 8, Redis queues with Horizon, Inertia + Vue 3, Meilisearch, Adyen payments, nightly ERP stock sync over SFTP (CSV), Pest, PHPStan (larastan), Forge/Envoyer on DigitalOcean, Bitbucket Pipelines, Bugsnag", H_FACT, H_OTHER, H_PROBES)
    write("set_i", "internal HR and payroll system for a manufacturer: .NET 8 / C#, ASP.NET Core Web API, Blazor Server, EF Core 8 on Azure SQL, Hangfire, Entra ID, QuestPDF payslips, ISO 20022 pain.001 bank files over SFTP, Quinyx timesheet import, Azure App Service with Bicep, Azure App Configuration, Azure DevOps Pipelines, Serilog/Seq, xUnit with Testcontainers", I_FACT, I_OTHER, I_PROBES)
    write("set_j", "real-time transit arrivals platform for a city transit agency: Elixir/Phoenix, Ecto on PostgreSQL + PostGIS, Oban, Redis, LiveView dispatcher console, public JSON API, GTFS static and GTFS-realtime feeds from the AVL vendor, AKS with Helm, GitHub Actions, Prometheus/Grafana, Sentry", J_FACT, J_OTHER, J_PROBES)
    write("set_k", "claims-processing platform for a UK motor and home insurer: Python 3.12, FastAPI services, SQLAlchemy 2 + Alembic on Aurora PostgreSQL, Temporal workflows, AWS (ECS Fargate, S3, SQS, Lambda, Textract OCR), React adjuster portal, Terraform, GitLab CI, Datadog, pytest; vendors PanelPoint Estimates and Veritrace", K_FACT, K_OTHER, K_PROBES)
    write("set_l", "backend of a cross-platform multiplayer mobile game: Go services (matchmaking, inventory, store receipt validation), C++ dedicated servers on Agones/GKE, Redis, Cloud Spanner, Pub/Sub, Firebase Remote Config, Unity client, Jenkins, Grafana/Loki/Prometheus, k6; an anti-cheat vendor", L_FACT, L_OTHER, L_PROBES)
