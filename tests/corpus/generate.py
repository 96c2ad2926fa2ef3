#!/usr/bin/env python3
"""Write the labelled detection corpus: positives.jsonl and negatives.jsonl beside this file.

    python tests/corpus/generate.py            # deterministic (seed 9); rewrites both files

Positives are secrets and personal data generated in their documented formats (with the
checksum where the format has one: GitHub/npm CRC32, Luhn, IBAN mod 97, numbers valid per
libphonenumber), each placed in realistic surrounding text. None is a live secret: every
random part comes from this script's seeded generator. A record:

    {"id", "kind", "context", "place", "text", "spans": [[start, end]]}

`spans` are the exact characters that must be masked (a mask may cover more, never less).
`place` says where bench/detect.py puts the text in a request body.

Negatives are real artefacts (excerpts in artefacts/, see artefacts/SOURCES.md; recorded
provider traffic from DISGUISE_FIXTURES) and the code, names and ids that detectors
commonly mangle. A record: {"id", "category", "breaks", "place", "text", "note", ["allowed"]};
breaks is false only for placeholder examples (`sk-...`, `AKIAIOSFODNN7EXAMPLE`), which may
be masked or not; `allowed` lists example data inside real code (an address in a
docstring) that has exactly the form of the real thing and may be masked.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import random
import string
import sys
from pathlib import Path

import formats

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = Path(os.environ.get("DISGUISE_FIXTURES", REPO.parent / "shared" / "fixtures" / "real"))

R = random.Random(9)
ALNUM = string.ascii_letters + string.digits
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def rs(n: int, alphabet: str = ALNUM) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def b64(nbytes: int) -> str:
    return base64.b64encode(R.randbytes(nbytes)).decode()


def b64url(nbytes: int) -> str:
    return base64.urlsafe_b64encode(R.randbytes(nbytes)).decode().rstrip("=")


def base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out.rjust(width, "0")


def crc_token(prefix: str) -> str:
    body = rs(30)
    return prefix + body + base62(binascii.crc32(body.encode()), 6)


def luhn_complete(partial: str) -> str:
    for d in "0123456789":
        s = partial + d
        total = 0
        for i, ch in enumerate(reversed(s)):
            v = int(ch) * (2 if i % 2 else 1)
            total += v - 9 if v > 9 else v
        if total % 10 == 0:
            return s
    raise AssertionError


def iban(cc: str, bban_len: int) -> str:
    bban = rs(bban_len, string.digits) if cc not in ("GB", "NL") else None
    if cc == "GB":
        bban = rs(4, string.ascii_uppercase) + rs(14, string.digits)
    if cc == "NL":
        bban = rs(4, string.ascii_uppercase) + rs(10, string.digits)
    assert bban is not None
    moved = bban + cc + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    return f"{cc}{check:02d}{bban}"


def pem(kind: str, nbytes: int, width: int = 64) -> str:
    body = base64.b64encode(R.randbytes(nbytes)).decode()
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----"


# -- secret generators: kind -> (value, env var name) -------------------------------------


def jwt() -> str:
    head = b64url_json({"alg": "HS256", "typ": "JWT"})
    body = b64url_json({"sub": str(R.randint(10**6, 10**7)), "name": "Ana Ruiz", "iat": 1716239022,
                        "exp": 1716325422, "scope": "read:orders write:orders"})
    return f"{head}.{body}.{b64url(32)}"


def b64url_json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def discord_bot() -> str:
    uid = str(R.randint(10**17, 2 * 10**18))
    return base64.b64encode(uid.encode()).decode().rstrip("=") + "." + rs(6, URLSAFE) + "." + rs(38, URLSAFE)


GEN: dict[str, tuple] = {
    # kind: (generator, env var name)
    "anthropic_api_key": (lambda: "sk-ant-api03-" + rs(93, URLSAFE) + "AA", "ANTHROPIC_API_KEY"),
    "anthropic_admin_key": (lambda: "sk-ant-admin01-" + rs(93, URLSAFE) + "AA", "ANTHROPIC_ADMIN_KEY"),
    "anthropic_oauth_token": (lambda: "sk-ant-oat01-" + rs(93, URLSAFE) + "AA", "CLAUDE_CODE_OAUTH_TOKEN"),
    "openai_project_key": (lambda: "sk-proj-" + rs(74, URLSAFE) + "T3BlbkFJ" + rs(74, URLSAFE), "OPENAI_API_KEY"),
    "openai_svcacct_key": (lambda: "sk-svcacct-" + rs(58, URLSAFE) + "T3BlbkFJ" + rs(58, URLSAFE), "OPENAI_API_KEY"),
    "openai_admin_key": (lambda: "sk-admin-" + rs(58, URLSAFE) + "T3BlbkFJ" + rs(58, URLSAFE), "OPENAI_ADMIN_KEY"),
    "openai_legacy_key": (lambda: "sk-" + rs(20) + "T3BlbkFJ" + rs(20), "OPENAI_API_KEY"),
    "google_api_key": (lambda: "AIza" + rs(35, URLSAFE), "GOOGLE_API_KEY"),
    "google_oauth_client_secret": (lambda: "GOCSPX-" + rs(28, URLSAFE), "GOOGLE_CLIENT_SECRET"),
    "google_oauth_access_token": (lambda: "ya29.a0" + rs(150, URLSAFE), "GOOGLE_ACCESS_TOKEN"),
    "mistral_api_key": (lambda: rs(32), "MISTRAL_API_KEY"),
    "cohere_api_key": (lambda: rs(40), "COHERE_API_KEY"),
    "groq_api_key": (lambda: "gsk_" + rs(52), "GROQ_API_KEY"),
    "xai_api_key": (lambda: "xai-" + rs(80), "XAI_API_KEY"),
    "deepseek_api_key": (lambda: "sk-" + rs(32, HEX), "DEEPSEEK_API_KEY"),
    "openrouter_api_key": (lambda: "sk-or-v1-" + rs(64, HEX), "OPENROUTER_API_KEY"),
    "together_api_key": (lambda: "tgp_v1_" + rs(43, URLSAFE), "TOGETHER_API_KEY"),
    "fireworks_api_key": (lambda: "fw_" + rs(24), "FIREWORKS_API_KEY"),
    "perplexity_api_key": (lambda: "pplx-" + rs(48), "PERPLEXITY_API_KEY"),
    "huggingface_token": (lambda: "hf_" + rs(34, string.ascii_letters), "HF_TOKEN"),
    "replicate_token": (lambda: "r8_" + rs(37), "REPLICATE_API_TOKEN"),
    "langsmith_key": (lambda: "lsv2_pt_" + rs(32, HEX) + "_" + rs(10, HEX), "LANGSMITH_API_KEY"),
    "aws_access_key_id": (lambda: R.choice(["AKIA", "ASIA"]) + rs(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "AWS_ACCESS_KEY_ID"),
    "aws_secret_access_key": (lambda: rs(40, B64), "AWS_SECRET_ACCESS_KEY"),
    "aws_session_token": (lambda: "IQoJb3JpZ2luX2Vj" + b64(420).rstrip("="), "AWS_SESSION_TOKEN"),
    "azure_storage_key": (lambda: b64(64), "AZURE_STORAGE_KEY"),
    "azure_sas_signature": (lambda: b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"), "AZURE_SAS"),
    "azure_client_secret": (lambda: rs(3) + str(R.randint(0, 9)) + "Q~" + rs(34, ALNUM + "_~.-"), "AZURE_CLIENT_SECRET"),
    "github_pat": (lambda: crc_token("ghp_"), "GITHUB_TOKEN"),
    "github_oauth_token": (lambda: crc_token("gho_"), "GH_OAUTH_TOKEN"),
    "github_app_token": (lambda: crc_token("ghs_"), "GITHUB_TOKEN"),
    "github_fine_grained_pat": (lambda: "github_pat_11" + rs(20, string.ascii_uppercase + string.digits) + "_" + rs(59), "GH_TOKEN"),
    "gitlab_pat": (lambda: "glpat-" + rs(20, URLSAFE), "GITLAB_TOKEN"),
    "gitlab_pat_routable": (lambda: "glpat-" + rs(36, URLSAFE) + ".01." + rs(9, string.ascii_lowercase + string.digits), "GITLAB_TOKEN"),
    "gitlab_runner_token": (lambda: "glrt-" + rs(20, URLSAFE), "RUNNER_TOKEN"),
    "gitlab_runner_registration": (lambda: "GR1348941" + rs(20, URLSAFE), "REGISTRATION_TOKEN"),
    "bitbucket_app_password": (lambda: "ATBB" + rs(32) + rs(8, HEX.upper()), "BITBUCKET_APP_PASSWORD"),
    "atlassian_api_token": (lambda: "ATATT3xFfGF0" + rs(180, URLSAFE) + "=" + rs(8, HEX.upper()), "JIRA_API_TOKEN"),
    "npm_token": (lambda: crc_token("npm_"), "NPM_TOKEN"),
    "pypi_token": (lambda: "pypi-AgEIcHlwaS5vcmc" + rs(160, URLSAFE), "TWINE_PASSWORD"),
    "slack_bot_token": (lambda: f"xoxb-{R.randint(10**11, 10**12)}-{R.randint(10**12, 10**13)}-{rs(24)}", "SLACK_BOT_TOKEN"),
    "slack_user_token": (lambda: f"xoxp-{R.randint(10**11, 10**12)}-{R.randint(10**11, 10**12)}-{R.randint(10**12, 10**13)}-{rs(32, HEX)}", "SLACK_USER_TOKEN"),
    "slack_app_token": (lambda: f"xapp-1-A0{rs(9, string.ascii_uppercase + string.digits)}-{R.randint(10**12, 10**13)}-{rs(64, HEX)}", "SLACK_APP_TOKEN"),
    "slack_webhook": (lambda: f"https://hooks.slack.com/services/T0{rs(7, string.ascii_uppercase + string.digits)}/B0{rs(9, string.ascii_uppercase + string.digits)}/{rs(24)}", "SLACK_WEBHOOK_URL"),
    "discord_bot_token": (discord_bot, "DISCORD_TOKEN"),
    "discord_webhook": (lambda: f"https://discord.com/api/webhooks/{R.randint(10**17, 2 * 10**18)}/{rs(68, URLSAFE)}", "DISCORD_WEBHOOK_URL"),
    "telegram_bot_token": (lambda: f"{R.randint(10**8, 10**10 - 1)}:AA{rs(33, URLSAFE)}", "TELEGRAM_BOT_TOKEN"),
    "teams_webhook": (lambda: f"https://contoso.webhook.office.com/webhookb2/{uuid()}@{uuid()}/IncomingWebhook/{rs(32, HEX)}/{uuid()}/V2{rs(40, URLSAFE)}", "TEAMS_WEBHOOK_URL"),
    "stripe_secret_key": (lambda: "sk_live_" + rs(99), "STRIPE_SECRET_KEY"),
    "stripe_test_key": (lambda: "sk_test_" + rs(24), "STRIPE_SECRET_KEY"),
    "stripe_restricted_key": (lambda: "rk_live_" + rs(99), "STRIPE_RESTRICTED_KEY"),
    "stripe_webhook_secret": (lambda: "whsec_" + rs(32), "STRIPE_WEBHOOK_SECRET"),
    "twilio_api_key": (lambda: "SK" + rs(32, HEX), "TWILIO_API_KEY"),
    "twilio_auth_token": (lambda: rs(32, HEX), "TWILIO_AUTH_TOKEN"),
    "sendgrid_api_key": (lambda: "SG." + rs(22, URLSAFE) + "." + rs(43, URLSAFE), "SENDGRID_API_KEY"),
    "mailgun_api_key": (lambda: "key-" + rs(32, HEX), "MAILGUN_API_KEY"),
    "mailgun_sending_key": (lambda: rs(32, HEX) + "-" + rs(8, HEX) + "-" + rs(8, HEX), "MAILGUN_API_KEY"),
    "databricks_token": (lambda: "dapi" + rs(32, HEX), "DATABRICKS_TOKEN"),
    "shopify_access_token": (lambda: "shpat_" + rs(32, HEX), "SHOPIFY_ACCESS_TOKEN"),
    "vault_token": (lambda: "hvs." + rs(91, URLSAFE), "VAULT_TOKEN"),
    "digitalocean_token": (lambda: "dop_v1_" + rs(64, HEX), "DIGITALOCEAN_TOKEN"),
    "jwt": (jwt, "ID_TOKEN"),
    "age_secret_key": (lambda: "AGE-SECRET-KEY-1" + rs(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), "AGE_KEY"),
}


def uuid() -> str:
    h = rs(32, HEX)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# -- contexts: (name, template) using {v} (the secret) and {k} (its variable name) ---------

CONTEXTS: dict[str, str] = {
    "env": "# .env\nNODE_ENV=production\nPORT=8080\n{k}={v}\nLOG_LEVEL=info\n",
    "export": "$ export {k}=\"{v}\"\n$ python scripts/sync.py --dry-run\n",
    "json": '{{\n  "service": "billing-worker",\n  "region": "eu-west-1",\n  "{kl}": "{v}",\n  "retries": 3\n}}',
    "yaml": "app:\n  name: billing-worker\n  replicas: 2\nsecrets:\n  {kl}: {v}\n  timeout_seconds: 30\n",
    "log": "2024-05-14T09:12:44.381Z DEBUG http.client request headers={{'User-Agent': 'sync/2.3'}} {kl}={v} attempt=1\n",
    "code_py": 'import os\n\nclient = Client(\n    {kl}="{v}",\n    timeout=30,\n)\n',
    "code_js": "const config = {{\n  baseURL: 'https://api.internal.example',\n  {kc}: '{v}',\n}};\n",
    "curl": "curl -sS https://api.service.example/v1/items \\\n  -H \"Authorization: Bearer {v}\" \\\n  -H 'Content-Type: application/json'",
    "markdown": "## Setup\n\nSet the key before running the tests (I'm pasting mine so you can reproduce):\n\n```bash\n{k}={v} pytest -x\n```\n",
    "k8s": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: prod\ntype: Opaque\nstringData:\n  {kl}: \"{v}\"\n",
    "tool_json": None,  # JSON text of a tool result: see place_json
    "prose": "Here is the value from the dashboard: {v} — can you check why the request still fails?",
}


def camel(k: str) -> str:
    parts = k.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def render(ctx: str, k: str, v: str) -> str:
    if ctx == "tool_json":
        # what a tool returns: JSON text whose strings carry \n escapes right before the value
        return json.dumps({"exit_code": 0, "stdout": f"loaded config\n{k}={v}\nstarting workers", "stderr": ""})
    return CONTEXTS[ctx].format(k=k, kl=k.lower(), kc=camel(k), v=v)


# Contexts where the value has no name next to it: only kinds whose shape is distinctive.
NEEDS_NAME = {"mistral_api_key", "cohere_api_key", "aws_secret_access_key", "twilio_auth_token",
              "azure_storage_key", "azure_sas_signature"}
PLACES = ["anthropic_user", "anthropic_tool_result", "anthropic_tool_input", "openai_user", "responses_function_output"]


G = formats.Gen(random.Random(17))  # its own stream: the records above stay as they were


def more_positives(add) -> None:
    """The scanners' token formats (formats.py), the assignment forms, and the PII added
    by issue 17."""
    g = G
    for kind, (gen, k, _prefix) in formats.FORMATS.items():
        ctxs = ["prose", *g.r.sample([c for c in CONTEXTS if c not in ("prose", "curl")], 2)]
        for ctx in ctxs:
            v = gen(g)
            add(kind, ctx, render(ctx, k, v), v)
    for kind, (gen, k) in formats.KEYED.items():
        for ctx in g.r.sample(["env", "json", "yaml", "code_py", "k8s", "export"], 3):
            v = gen(g)
            add(kind, ctx, render(ctx, k, v), v)
    tok = lambda: g.s(12) + str(g.r.randint(10, 99)) + g.s(20)  # noqa: E731
    for kind, tpl in (("assign_go_var", 'var apiToken string = "{v}"\n'),
                      ("assign_kotlin_typed", 'val clientSecret: String = "{v}"\n'),
                      ("assign_make_conditional", "DEPLOY_TOKEN ?= {v}\n"),
                      ("assign_make_shell", 'REGISTRY_TOKEN ::= "{v}"\n'),
                      ("assign_make_evaluated", "API_SECRET :::= {v}\n"),
                      ("assign_php_concat", '$authToken .= "{v}";\n'),
                      ("assign_java_set_property", 'System.setProperty("PAYMENTS_API_KEY", "{v}");\n'),
                      ("assign_call_arguments", 'os.environ.setdefault("SERVICE_TOKEN", "{v}")\n'),
                      ("assign_xml_element", "<settings>\n  <apiToken>\n    {v}\n  </apiToken>\n</settings>\n"),
                      ("assign_xml_inline", "<clientSecret>{v}</clientSecret>\n"),
                      ("assign_xml_attribute", '<add key="ClearTextPassword" value="{v}" />\n'),
                      ("assign_camel_infix", 'mySecretString = "{v}"\n'),
                      ("assign_logstash", '  "apiToken" => "{v}"\n')):
        for _ in range(2):
            v = tok()
            add(kind, "code", tpl.format(v=v), v)
    # user:password as one span
    for tpl in ("curl -u deploy:{p} https://registry.acme.example/v2/_catalog", "curl --user 'ci-bot:{p}' https://nexus.acme.example/",
                'curl -s -u ":{p}" https://api.acme.example/v1/me'):
        p = g.s(14, formats.ALNUM + "!#%")
        text = tpl.format(p=p)
        span = p if '":' in tpl else tpl.split("{p}")[0].split()[-1].lstrip("'") + p
        add("credential_pair", "curl", text, span)
    for _ in range(2):
        u, p = "svc_" + g.s(5, "abcdefghij"), g.s(16)
        add("credential_pair", "url", f"DATABASE_URL=postgres://{u}:{p}@db.internal:5432/app\n", f"{u}:{p}")
    # Bundler's credentials for a gem server (Sidekiq Pro/Enterprise): user:password after BUNDLE_<HOST>
    for tpl in ("BUNDLE_ENTERPRISE__CONTRIBSYS__COM={v}\n", "export BUNDLE_GEMS__CONTRIBSYS__COM='{v}'\n"):
        v = f"{g.s(8, HEX)}:{g.s(8, HEX)}"
        add("bundler_credentials", "env", tpl.format(v=v), v)
    # Kubernetes Secret data
    for _ in range(2):
        pw = base64.b64encode(g.s(18).encode()).decode()
        tok_ = base64.b64encode(("ghp_" + g.s(36)).encode()).decode()
        text = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\ntype: Opaque\ndata:\n"
                f"  password: {pw}\n  api-token: {tok_}\n")
        add("k8s_secret_data", "manifest", text, pw)
        add("k8s_secret_data", "manifest", text, tok_)
    # PII: US social security numbers, private IPv6, non-ASCII e-mail, US phones, session cookies
    def ssn_num() -> str:
        while True:
            a, gr, se = g.r.randint(1, 899), g.r.randint(1, 99), g.r.randint(1, 9999)
            if a != 666:
                return f"{a:03d}-{gr:02d}-{se:04d}"
    for tpl in ("SSN: {v}", "applicant ssn={v} dob=1984-03-12", '{{"name": "Ana Ruiz", "ssn": "{v}"}}', "Social Security Number {v} on file"):
        v = ssn_num()
        add("us_ssn", "mixed", tpl.format(v=v), v)
    for tpl in ("SSN {v}", "social security no. {v}"):
        v = ssn_num().replace("-", " " if "no." in tpl else "")
        add("us_ssn_unformatted", "keyword", tpl.format(v=v), v)
    for tpl in ("inet6 {v}/64 scope global", "ssh admin@[{v}]", "upstream [{v}]:8080;"):
        v = f"fd{g.s(2, HEX)}:{g.s(4, HEX)}:{g.s(4, HEX)}::{g.s(3, HEX)}"
        add("ipv6_unique_local", "mixed", tpl.format(v=v), v)
        v = f"fe80::{g.s(4, HEX)}:{g.s(2, HEX)}ff:fe{g.s(2, HEX)}:{g.s(4, HEX)}"
        add("ipv6_link_local", "mixed", tpl.format(v=v) if "ssh" not in tpl else f"ping6 {v}%eth0", v + ("%eth0" if "ssh" in tpl else ""))
    for e in ("δοκιμή@παράδειγμα.ελ", "अजय@डाटामेल.भारत", "пользователь@почта.рф", "用户@例子.中国", "ñandú@pingüino.es", "françois.dupont@société.fr"):
        add("email_nonascii", "mixed", f"Kontakt: {e} (Vertrieb)", e)
    for tpl, v in (("Phone: {v}", "(415) 555-2671"), ("call me at {v} after 5pm", "415-555-2671"), ("Mobile {v}", "415.555.2671"),
                   ("tel: {v}", "1-212-555-0147"), ("fax {v}", "(212) 555 0148")):
        import phonenumbers as _pn
        if _pn.is_valid_number(_pn.parse(v, "US")):
            add("phone_us", "keyword", tpl.format(v=v), v)
    for kind, name in (("cookie_phpsessid", "PHPSESSID"), ("cookie_jsessionid", "JSESSIONID"), ("cookie_connect_sid", "connect.sid"),
                       ("cookie_django_sessionid", "sessionid"), ("cookie_rails_session", "_shop_session"), ("cookie_laravel_session", "laravel_session")):
        v = g.s(32, HEX) if name != "connect.sid" else "s%3A" + g.s(32, URLSAFE) + "." + g.s(43, formats.ALNUM + "%")
        add(kind, "cookie", f"Cookie: theme=dark; {name}={v}; lang=en\n", v)
        v = g.s(26, formats.LOWER_ALNUM) if name == "PHPSESSID" else g.s(40, URLSAFE)
        add(kind, "set_cookie", f"HTTP/1.1 302 Found\r\nSet-Cookie: {name}={v}; Path=/; HttpOnly; Secure\r\n", v)


def issue28_positives(add) -> None:
    """The misses issue 28 lists, in config forms and in prose (their own random stream:
    the records before stay as they were)."""
    g = formats.Gen(random.Random(28))
    lower36 = formats.LOWER_ALNUM
    azure = lambda: base64.b64encode(g.r.randbytes(64)).decode()  # noqa: E731  (88 characters, `==`)
    for name in ("STRIPE_KEY", "SENDGRID_KEY", "ALGOLIA_KEY", "MAPS_KEY", "DEPLOY_KEY", "SERVICE_KEY", "STORAGE_KEY",
                 "ACCOUNT_KEY", "SDK_KEY", "PRIMARY_KEY", "COSMOS_KEY", "KEY"):
        v = g.s(32) if name != "ALGOLIA_KEY" else g.s(32, HEX)
        add("key_name", "env", f"{name}={v}\n", v)
    v = g.s(39)
    add("key_name", "yaml", f"maps:\n  mapsKey: {v}\n", v)
    for tpl in ("DB_PASS={v}\n", "export DB_PASS='{v}'\n"):
        v = g.s(32)
        add("db_pass", "env", tpl.format(v=v), v)
    for tpl in ('[\n  {{\n    "creationTime": "2025-01-14T09:12:33.120000+00:00",\n    "keyName": "key1",\n    "permissions": "FULL",\n    "value": "{v}"\n  }}\n]\n',
                "AZURE_STORAGE_KEY={v}\n", "az storage blob upload --account-name acmelogs --account-key {v} -f a.log\n",
                "conn = BlobServiceClient(account_url=url, credential={{'account_name': 'acme', 'account_key': '{v}'}})\n"):
        v = azure()
        add("azure_storage_key", "config", tpl.format(v=v), v)
    for tpl in ("COSMOS_KEY={v}\n", '{{"primaryMasterKey": "{v}", "documentEndpoint": "https://acme.documents.azure.com:443/"}}\n'):
        v = azure()
        add("azure_cosmos_key", "config", tpl.format(v=v), v)
    for tpl in ("REDIS_URL=redis://default:{v}@cache.internal:6379/0\n", "connect to rediss://:{v}@redis-prod.acme.example:6380 now"):
        v = "$" + g.s(1, string.ascii_uppercase) + g.s(23)
        add("redis_url_password", "url", tpl.format(v=v), v)
    for pre in ("sdk-", "api-"):
        v = pre + "-".join(g.s(n, lower36) for n in (8, 4, 4, 4, 12))
        add("launchdarkly_sdk_key" if pre == "sdk-" else "launchdarkly_token", "prose", f"the LaunchDarkly key {v} is for staging", v)
    for _ in range(2):
        v = "ATCTT3xFfGN0" + g.s(180, formats.ALNUM + "_-") + "=" + g.s(8, HEX.upper())
        add("atlassian_admin_key", "prose", f"Use the org admin key {v} for the user provisioning API.", v)
    for ctx in ("env", "prose"):
        v = "eu01xx" + g.s(30, HEX) + "NRAL"
        add("new_relic_license_key", ctx, f"NEW_RELIC_LICENSE_KEY={v}\n" if ctx == "env" else f"EU license key {v} (ingest)", v)
    for ctx in ("prose", "env"):
        v = "phx_" + g.s(20) + "_" + g.s(26)
        add("posthog_personal_key", ctx, f"personal key {v} works" if ctx == "prose" else f"POSTHOG_PERSONAL_API_KEY={v}\n", v)
    for ctx in ("prose", "env"):
        v = "EAAA" + g.s(40, URLSAFE) + "=" + g.s(19, URLSAFE)
        add("square_access_token", ctx, f"square token {v} ok" if ctx == "prose" else f"SQUARE_ACCESS_TOKEN={v}\n", v)
    for ctx in ("prose", "env"):
        v = "-" + g.s(2, formats.ALNUM) + str(g.r.randint(0, 9)) + "Q~" + g.s(34, formats.ALNUM + "_~.-")
        add("azure_client_secret", ctx, f"the client secret is {v} (expires 2026)" if ctx == "prose" else f"AZURE_CLIENT_SECRET={v}\n", v)
    for ctx in ("prose", "env"):
        v = "ghs_" + g.s(40) + "_" + g.s(50)
        add("github_app_token", ctx, f"installation token {v} expires in 1h" if ctx == "prose" else f"GH_TOKEN={v}\n", v)
    for _ in range(2):
        v = "nfp_" + g.s(36)
        add("netlify_token", "prose", f"deploy with nfp token {v} then purge", v)
    for tpl, v in (("IBAN: {v}", "DE89-3704-0044-0532-0130-00"), ("Please wire it to {v} before Friday.", "GB82 WEST 1234 5698 7654 32"),
                   ("Our account {v} is at ING.", "NL91ABNA0417164300")):
        add("iban", "prose", tpl.format(v=v), v)
    for ctx in ("env", "yaml"):
        v = "AC" + g.s(32, HEX)
        add("twilio_account_sid", ctx, f"TWILIO_ACCOUNT_SID={v}\n" if ctx == "env" else f"twilio:\n  account_sid: {v}\n", v)
    for name in ("POSTGRES_PASSWORD", "API_TOKEN"):
        v = g.s(24)
        add("k8s_env_pair", "k8s", f"      env:\n        - name: {name}\n          value: \"{v}\"\n        - name: PGDATA\n", v)
    for tpl in ("mysql -h db.internal -u root -p'{v}' shop", "mysqldump -uadmin -p{v} --all-databases > all.sql"):
        v = g.s(16, formats.ALNUM + "#%")
        add("mysql_password_flag", "shell", tpl.format(v=v), v)
    for tpl, v in (("SSN: {v}", "536.22.8190"), ("social security number {v}", "219 44 7031"), ("SSN#  {v}.", "412.36.9811")):
        add("us_ssn_unformatted", "keyword", tpl.format(v=v), v)
    for tpl, v in (("My US number is {v}", "(415) 555-0132"), ("phone number: {v}", "212-555-0189")):
        add("phone_us", "keyword", tpl.format(v=v), v)
    for _ in range(2):
        sig = g.s(20, formats.ALNUM) + "/" + g.s(10) + "+" + g.s(12)
        v = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiI" + g.s(20) + "IiwiZXhwIjoxNzE2MzI1NDIyfQ." + sig
        add("jwt", "prose", f"the bearer was {v} yesterday", v)


def positives() -> list[dict]:
    recs: list[dict] = []

    def add(kind: str, context: str, text: str, secret: str, occurrence: int = 0) -> None:
        i = -1
        for _ in range(occurrence + 1):
            i = text.find(secret, i + 1)
        assert i >= 0, (kind, context)
        recs.append({"id": f"{kind}-{context}-{len(recs)}", "kind": kind, "context": context,
                     "place": PLACES[len(recs) % len(PLACES)], "text": text, "spans": [[i, i + len(secret)]]})

    for kind, (gen, k) in GEN.items():
        ctxs = list(CONTEXTS)
        if kind in NEEDS_NAME:
            ctxs = [c for c in ctxs if c not in ("prose", "curl")]
        if kind in ("slack_webhook", "discord_webhook", "teams_webhook"):
            ctxs = [c for c in ctxs if c != "curl"]
        for ctx in R.sample(ctxs, min(5, len(ctxs))):
            v = gen()
            if kind == "azure_storage_key":
                v_text = f"DefaultEndpointsProtocol=https;AccountName=acmeprodstore;AccountKey={v};EndpointSuffix=core.windows.net"
                add(kind, ctx, render(ctx, "AZURE_STORAGE_CONNECTION_STRING", v_text), v)
            elif kind == "azure_sas_signature":
                url = (f"https://acmeprodstore.blob.core.windows.net/exports/q3.csv?sv=2022-11-02&ss=b&srt=o"
                       f"&sp=r&se=2025-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig={v}")
                add(kind, ctx, render(ctx, "EXPORT_URL", url), v)
            else:
                add(kind, ctx, render(ctx, k, v), v)
    # the escapes of JSON text, right before a key (the `\b` miss) and after `_`
    for kind in ("openai_project_key", "anthropic_api_key", "github_pat", "google_api_key", "jwt", "stripe_secret_key"):
        gen, k = GEN[kind]
        v = gen()
        text = json.dumps({"output": f"config:\n{v}\n\tdone"})
        add(kind, "tool_json_escape", text, v)
        v = gen()
        add(kind, "tool_json_escape", json.dumps({"log": f"token loaded\t{v}"}), v)
    for prefix_kind, pre in (("github_pat", "token_"), ("openai_project_key", "key_"), ("slack_bot_token", "SLACK_")):
        v = GEN[prefix_kind][0]()
        add(prefix_kind, "underscore", f"export {pre}{v}\n", v)
        v = GEN[prefix_kind][0]()
        add(prefix_kind, "underscore", f"x-{pre}{v}", v)
    # GitHub tokens inside clone URLs
    v = crc_token("ghp_")
    add("github_pat", "url", f"git clone https://{v}@github.com/acme/infra.git", v)
    v = crc_token("ghs_")
    add("github_app_token", "url", f"git remote set-url origin https://x-access-token:{v}@github.com/acme/api.git", v)

    # AWS: the shapes it really comes in
    for _ in range(2):
        akid, secret = GEN["aws_access_key_id"][0](), GEN["aws_secret_access_key"][0]()
        text = f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = {secret}\nregion = us-east-1\n"
        add("aws_access_key_id", "ini", text, akid)
        add("aws_secret_access_key", "ini", text, secret)
    akid, secret = GEN["aws_access_key_id"][0](), GEN["aws_secret_access_key"][0]()
    text = f"User name,Password,Access key ID,Secret access key,Console login link\nci-deployer,,{akid},{secret},https://123456789012.signin.aws.amazon.com/console\n"
    add("aws_secret_access_key", "csv", text, secret)
    secret = GEN["aws_secret_access_key"][0]()
    text = json.dumps({"Credentials": {"AccessKeyId": "ASIA" + rs(16, string.ascii_uppercase), "SecretAccessKey": secret,
                                       "SessionToken": GEN["aws_session_token"][0](), "Expiration": "2024-05-14T21:12:44Z"}}, indent=2)
    add("aws_secret_access_key", "json", text, secret)
    secret = GEN["aws_secret_access_key"][0]()
    add("aws_secret_access_key", "shell", f"$ aws configure set aws_secret_access_key {secret} --profile prod", secret)

    # private keys
    for ctx in ("file", "yaml_block", "json_escaped", "markdown"):
        for kind, label, nbytes, width in (("private_key_rsa", "RSA PRIVATE KEY", 1190, 64),
                                           ("private_key_pkcs8", "PRIVATE KEY", 1216, 64),
                                           ("private_key_ec", "EC PRIVATE KEY", 121, 64),
                                           ("private_key_openssh", "OPENSSH PRIVATE KEY", 387, 70)):
            key = pem(label, nbytes, width)
            if ctx == "file":
                text = f"$ cat ~/.ssh/deploy_key\n{key}\n$ chmod 600 ~/.ssh/deploy_key\n"
                add(kind, ctx, text, key)
            elif ctx == "yaml_block":
                ind = "\n    ".join(key.split("\n"))
                text = f"tls:\n  enabled: true\n  key: |\n    {ind}\n  cert_file: /etc/ssl/app.crt\n"
                add(kind, ctx, text, ind)
            elif ctx == "json_escaped":
                text = json.dumps({"stdout": key + "\n", "exit_code": 0})
                enc = json.dumps(key)[1:-1]
                add(kind, ctx, text, enc)
            else:
                text = f"The service fails with this key, what is wrong?\n\n```\n{key}\n```\n"
                add(kind, ctx, text, key)
    enc_key = ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,"
               + rs(32, HEX.upper()) + "\n\n" + "\n".join(b64(48)[:64] for _ in range(12)) + "\n-----END RSA PRIVATE KEY-----")
    add("private_key_encrypted", "file", f"{enc_key}\n", enc_key)
    enc8 = pem("ENCRYPTED PRIVATE KEY", 1300)
    add("private_key_encrypted", "file", f"key.pem:\n{enc8}\n", enc8)
    # a PEM cut off by `head`: no END line; everything from BEGIN on must go
    for label, nbytes in (("RSA PRIVATE KEY", 1190), ("PRIVATE KEY", 1216), ("OPENSSH PRIVATE KEY", 387)):
        full = pem(label, nbytes)
        cut = "\n".join(full.split("\n")[:6])
        add("private_key_truncated", "head", f"$ head -6 /etc/app/{label.split()[0].lower()}.key\n{cut}\n$ ", cut)
        add("private_key_truncated", "json_escaped", json.dumps({"stdout": cut + "\n"}), json.dumps(cut)[1:-1])
    # base64 of a PEM, as in a Kubernetes Secret's data
    for label in ("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"):
        enc = base64.b64encode((pem(label, 1190 if "RSA" in label else 300) + "\n").encode()).decode()
        text = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: ingress-tls\ntype: kubernetes.io/tls\ndata:\n"
                f"  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t{b64(300)}\n  tls.key: {enc}\n")
        add("private_key_base64", "k8s", text, enc)
    # Windows line ends
    key = pem("RSA PRIVATE KEY", 1190).replace("\n", "\r\n")
    add("private_key_rsa", "crlf", f"C:\\keys> type id_rsa\r\n{key}\r\n", key)
    # service-account JSON (the private key in it is JSON-escaped)
    for place_ctx in ("file", "tool_json"):
        key = pem("PRIVATE KEY", 1216)
        sa = {"type": "service_account", "project_id": "acme-prod-4711", "private_key_id": rs(40, HEX),
              "private_key": key + "\n", "client_email": "etl-runner@acme-prod-4711.iam.gserviceaccount.com",
              "client_id": str(R.randint(10**20, 10**21)), "auth_uri": "https://accounts.google.com/o/oauth2/auth",
              "token_uri": "https://oauth2.googleapis.com/token"}
        text = json.dumps(sa, indent=2)
        if place_ctx == "tool_json":
            text = json.dumps({"content": text})
        enc = json.dumps(key)[1:-1]
        if place_ctx == "tool_json":
            enc = json.dumps(enc)[1:-1]
        add("gcp_service_account_key", place_ctx, text, enc)
    # PGP, PuTTY
    for _ in range(2):
        body = "\n".join(b64(48)[:64] for _ in range(20))
        pgp = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: exported for backup\n\n" + body
               + "\n=" + b64(3)[:4] + "\n-----END PGP PRIVATE KEY BLOCK-----")
        add("pgp_private_key", "file", f"$ gpg --armor --export-secret-keys ops@acme.example\n{pgp}\n", pgp)
    for ver in (2, 3):
        pub = "\n".join(b64(48)[:64] for _ in range(2))
        priv = b64(48)[:64]
        extra = "Key-Derivation: Argon2id\nArgon2-Memory: 8192\nArgon2-Passes: 21\nArgon2-Parallelism: 1\nArgon2-Salt: " + rs(32, HEX) + "\n" if ver == 3 else ""
        ppk = (f"PuTTY-User-Key-File-{ver}: ssh-ed25519\nEncryption: none\nComment: deploy@build-01\n"
               f"Public-Lines: 2\n{pub}\n{extra}Private-Lines: 1\n{priv}\nPrivate-MAC: {rs(64, HEX)}")
        add("putty_private_key", "file", f"Contents of deploy.ppk:\n\n{ppk}\n", ppk[ppk.index("Private-Lines"):])

    # URL credentials: the password only
    for url_tpl in ("postgres://app:{p}@localhost:5432/orders", "mysql://root:{p}@10.20.0.7:3306/shop",
                    "amqp://worker:{p}@rabbitmq:5672/%2f", "redis://:{p}@cache:6379/0",
                    "mongodb+srv://etl:{p}@cluster0.a1b2c.mongodb.net/analytics?retryWrites=true",
                    "postgresql://svc_report:{p}@db.internal.acme.example:5432/reports",
                    "https://deploy:{p}@nexus.acme.example/repository/pypi/simple"):
        for p in (rs(16, ALNUM + "*#!%^"), rs(10) + "*" + rs(3) + "#x", rs(20)):
            url = url_tpl.format(p=p)
            ctx = R.choice(["env", "yaml", "log", "code_py", "tool_json"])
            add("url_password", ctx, render(ctx, "DATABASE_URL", url), p)
    # HTTP auth
    for _ in range(4):
        cred = base64.b64encode(f"svc-{rs(5, string.ascii_lowercase)}:{rs(18)}".encode()).decode()
        add("basic_auth", "curl", f"curl -H 'Authorization: Basic {cred}' https://jenkins.acme.example/job/deploy/build", cred)
        add("basic_auth", "http", f"GET /api/v2/status HTTP/1.1\r\nHost: registry.acme.example\r\nAuthorization: Basic {cred}\r\nAccept: */*\r\n", cred)
    for _ in range(3):
        pw = rs(14, ALNUM + "!@#%")
        add("basic_auth", "curl_user", f"curl -u admin:{pw} http://grafana:3000/api/dashboards/home", pw)
    for _ in range(4):
        tok = rs(40, ALNUM + "-_.")
        add("bearer_token", "curl", f'curl https://api.partner.example/v3/orders -H "Authorization: Bearer {tok}"', tok)
        tok = rs(32, HEX)
        add("api_key_header", "http", f"X-Api-Key: {tok}\nAccept: application/json\n", tok)
    # passwords next to their name
    for tpl in ('DB_PASSWORD={p}\n', 'password: "{p}"\n', "  password: {p}\n", '"password": "{p}",',
                "PGPASSWORD='{p}' psql -h db -U app\n", "spring.datasource.password={p}\n",
                "MYSQL_ROOT_PASSWORD: {p}\n", "Server=tcp:acme.database.windows.net;Database=crm;User ID=crm_app;Password={p};Encrypt=true;",
                "redis_passwd = {p}\n", '{{\\"username\\": \\"svc\\", \\"password\\": \\"{p}\\"}}'):
        for p in (rs(12, ALNUM + "!#%&*"), "Summer" + str(R.randint(2019, 2025)) + "!" + rs(3)):
            text = tpl.format(p=p)
            add("password", "config", text, p)
    for p in ("correct horse battery staple", "my old laptop pass 42"):
        add("password", "yaml_quoted", f'smtp:\n  user: mailer\n  password: "{p}"\n', p)
    # generic secrets by their key
    for k in ("SECRET_KEY", "JWT_SECRET", "client_secret", "WEBHOOK_SIGNING_SECRET", "encryption_key", "api_token", "AUTH_TOKEN"):
        v = rs(40, ALNUM + "-_")
        ctx = R.choice(["env", "yaml", "json", "code_py"])
        add("generic_secret", ctx, render(ctx, k, v), v)

    # personal data
    emails = ["ana.ruiz@acme-logistics.com", "josé.garcía@exemple.fr", "o'malley@dublin-tech.ie",
              "j.smith+billing@mail.co.uk", "müller.jürgen@beispiel.de", "wei.zhang@研究所.中国",
              "kristina_ivanova@yandex.ru", "d'angelo.rossi@azienda.it", "pat@startup.io", "ceo@bigcorp.com",
              "Maria.Lopez@Hospital-General.org", "ops-team@acme.example.com", "renée.dubois@université.fr"]
    email_ctx = [
        "Please forward the invoice to {v} before Friday.",
        "From: Support <{v}>\nTo: ops@acme-logistics.com\nSubject: Re: outage\n",
        '{{"customer": {{"name": "Ana", "email": "{v}", "tier": "gold"}}}}',
        "commit 4f9d2c1\nAuthor: Dev <{v}>\nDate:   Tue May 14 09:12:44 2024 +0200\n",
        "id,email,plan\n1041,{v},pro\n",
        "2024-05-14 09:12:44 WARN login failed for user={v} ip=203.0.113.9",
        "'{v}'",
        '<a href="mailto:{v}?subject=Invoice">Contact billing</a>',
        "Reply-To: {v}",
        None,
    ]
    for e in emails:
        for tpl in R.sample(email_ctx, 3):
            if tpl is None:
                text = json.dumps({"stdout": f"users:\n{e}\nadmin@acme.example"}, ensure_ascii=False)
            else:
                text = tpl.format(v=e)
            add("email", "mixed", text, e)

    import phonenumbers

    for region in ("US", "GB", "DE", "FR", "ES", "IT", "NL", "CH", "IN", "BR", "JP", "AU", "SE", "PL", "MX", "ZA"):
        for ntype in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
            ex = phonenumbers.example_number_for_type(region, ntype)
            if ex is None:
                continue
            # vary the subscriber digits a little, keep only numbers that are still valid
            for _ in range(10):
                nat = str(ex.national_number)
                nat = nat[:-3] + rs(3, string.digits)
                n = phonenumbers.parse("+" + str(ex.country_code) + nat, None)
                if phonenumbers.is_valid_number(n):
                    break
            else:
                n = ex
            intl = phonenumbers.format_number(n, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
            e164 = phonenumbers.format_number(n, phonenumbers.PhoneNumberFormat.E164)
            tpl = R.choice(["Call me on {v} tomorrow.", "Tel: {v}\nFax: n/a", '"phone": "{v}"', "contact: Ana Ruiz, {v}"])
            add("phone_international", "mixed", tpl.format(v=intl), intl)
            add("phone_international", "e164", f"sms to={e164} status=queued", e164)
            if region in ("US", "GB", "DE"):
                national = phonenumbers.format_number(n, phonenumbers.PhoneNumberFormat.NATIONAL)
                add("phone_national", "keyword", f"Mobile: {national}", national)
                add("phone_national", "keyword", f"You can reach the on-call engineer by phone at {national}.", national)

    for _ in range(30):
        issuer = R.choice(["4", "51", "55", "2221", "34", "37", "6011", "65", "3530"])
        length = 15 if issuer in ("34", "37") else 16
        num = luhn_complete(issuer + rs(length - len(issuer) - 1, string.digits))
        style = R.choice(["plain", "spaced", "dashed"])
        if style == "spaced":
            shown = " ".join([num[:4], num[4:10], num[10:]]) if length == 15 else " ".join(num[i:i + 4] for i in range(0, 16, 4))
        elif style == "dashed":
            shown = "-".join([num[:4], num[4:10], num[10:]]) if length == 15 else "-".join(num[i:i + 4] for i in range(0, 16, 4))
        else:
            shown = num
        tpl = R.choice(["Card: {v} exp 09/27", '{{"pan": "{v}", "exp": "09/27"}}', "charged card {v} for order #88123",
                        "card_number={v}\n"])
        add("card_number", style, tpl.format(v=shown), shown)
    for cc, n in (("DE", 18), ("FR", 23), ("ES", 20), ("IT", 23), ("CH", 17), ("GB", 18), ("NL", 14), ("AT", 16), ("BE", 12), ("PL", 24)):
        for grouped in (False, True):
            if cc == "IT":
                b = rs(1, string.ascii_uppercase) + rs(22, string.digits)
                moved = b + cc + "00"
                ib = f"{cc}{98 - int(''.join(str(int(c, 36)) for c in moved)) % 97:02d}{b}"
            elif cc == "FR":
                b = rs(23, string.digits)
                moved = b + cc + "00"
                ib = f"{cc}{98 - int(''.join(str(int(c, 36)) for c in moved)) % 97:02d}{b}"
            else:
                ib = iban(cc, n)
            shown = " ".join(ib[i:i + 4] for i in range(0, len(ib), 4)) if grouped else ib
            tpl = R.choice(["IBAN: {v}\nBIC: COBADEFFXXX", "Please transfer to {v} (ref INV-2024-118).", '"iban": "{v}"'])
            add("iban", "grouped" if grouped else "plain", tpl.format(v=shown), shown)
    for _ in range(3):
        tok = jwt()
        add("jwt", "cookie", f"Cookie: theme=dark; session={tok}; _ga=GA1.2.{R.randint(10**8, 10**9)}.1715677964", tok)
    for tpl, v in (("tel:{v}", "+442079460958"), ("WhatsApp {v}", "+49 151 23456789"), ("phone: {v}", "+1-212-555-0123"),
                   ("Telefon: {v}", "+41 44 668 18 00"), ("call {v} (office)", "+33 1 42 68 53 00")):
        import phonenumbers as _pn
        if _pn.is_valid_number(_pn.parse(v, None)):
            add("phone_international", "mixed", tpl.format(v=v), v)
    for ip in ("10.0.3.17", "10.244.1.23", "172.16.0.4", "172.31.255.10", "192.168.1.50", "192.168.178.1"):
        for tpl in ("ssh deploy@{v}", "upstream app {{ server {v}:8080; }}", "connect ETIMEDOUT {v}:5432", '"host": "{v}"'):
            add("private_ip", "mixed", tpl.format(v=ip), ip)
    more_positives(add)
    issue28_positives(add)
    return recs


# -- negatives -----------------------------------------------------------------------------


# Example data in the library code excerpts: personal data and credentials by form.
EXAMPLE_DATA = ("jo@email.com", "jo@gmail.com", "realm@host.com", "a secret", "a%20secret", "jo%40email.com:a%20secret",
                "192.168.0.1", "::ffff:192.168.0.1")


def negatives() -> list[dict]:
    recs: list[dict] = []

    def add(category: str, text: str, note: str = "", breaks: bool = True, place: str = "anthropic_tool_result",
            allowed: list[str] | None = None) -> None:
        rec = {"id": f"{category}-{len(recs)}", "category": category, "breaks": breaks, "place": place,
               "text": text, "note": note}
        if allowed:
            rec["allowed"] = allowed
        recs.append(rec)

    art = HERE / "artefacts"
    for f in sorted(art.glob("*.excerpt")):
        text = f.read_text(encoding="utf-8")
        for i in range(0, len(text), 2500):
            piece = text[i:i + 2500]
            # library docstrings and tests hold example data of exactly the shape of the
            # real thing (an address, a private IP, a URL password): masking those is
            # expected, and reported apart from false positives
            allowed = [x for x in EXAMPLE_DATA if x in piece]
            add(f.name.removesuffix(".excerpt"), piece, "real artefact excerpt (artefacts/SOURCES.md)", allowed=allowed)
    # SRI, hashes, ids
    for _ in range(4):
        add("sri", f'<script src="https://cdn.jsdelivr.net/npm/chart.js@4.4.0/dist/chart.umd.min.js" integrity="sha384-{b64(48)}" crossorigin="anonymous"></script>')
    for _ in range(4):
        shas = [rs(40, HEX) for _ in range(6)]
        add("git_sha", "\n".join(f"{s[:7]} {m}" for s, m in zip(shas, ["Fix flaky test", "Bump deps", "Merge pull request #812 from acme/feat", "Refactor", "Docs", "Release 2.3.1"])))
        add("git_sha", f"https://github.com/acme/api/commit/{shas[0]}\nHEAD is now at {shas[1]}\nmerge-base: {shas[2]}")
    for _ in range(3):
        add("uuid", "\n".join(f'{{"id": "{uuid()}", "trace_id": "{rs(32, HEX)}", "span_id": "{rs(16, HEX)}"}}' for _ in range(4)))
        crock = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
        add("ulid", " ".join("01H" + rs(23, crock) for _ in range(6)))
    add("hashes", "\n".join(f"{rs(64, HEX)}  dist/app-{i}.tar.gz" for i in range(5)) + "\nmd5: " + rs(32, HEX))
    add("docker_digest", "FROM python:3.12-slim@sha256:" + rs(64, HEX) + "\nnginx@sha256:" + rs(64, HEX))
    add("npm_scoped", '"@babel/core@7.22.5", "@types/node@^20.11.0", pnpm add @tanstack/react-query@5.28.4')
    add("go_module", "go get golang.org/x/net@v0.17.0 github.com/stretchr/testify@v1.9.0\ngo install golang.org/x/tools/gopls@latest")
    add("versions", "Microsoft Windows [Version 10.0.19045.4291]\nPython 3.12.1\nnode v20.11.1\nchromedriver 124.0.6367.91")
    add("numbers", "order_id=1784512390 ts=1715677964123 ns=1715677964123456789 snowflake=1239874561237894561 isbn 978-3-16-148410-0")
    add("usage", '{"usage": {"input_tokens": 10240, "output_tokens": 4096, "cache_read_input_tokens": 123456}, "max_tokens": 8192}')
    add("colors", ".btn{color:#1f2937;background:#3b82f6} .sk-toggleable__label-arrow:before{content:\"▸\"} #sk-container-id-1 div.sk-toggleable__content{max-height:0}")
    # the issue's false positives
    add("asset_names", '<img src="/static/img/logo@2x.png" srcset="/static/img/logo@1x.png 1x, /static/img/logo@2x.png 2x, icon@3x.webp 3x">\nbackground-image: url("hero@2x.jpg");')
    add("git_remote", "origin\tgit@github.com:acme/payments-service.git (fetch)\norigin\tgit@github.com:acme/payments-service.git (push)\n$ git clone git@gitlab.com:acme/infra/terraform.git\nssh://git@bitbucket.org/acme/mobile.git")
    add("kotlin", "override fun onCreate(savedInstanceState: Bundle?) {\n    val intent = Intent(this@MainActivity, DetailActivity::class.java)\n    items.forEach { if (it.done) return@forEach }\n    Toast.makeText(this@MainActivity.applicationContext, \"Saved\", Toast.LENGTH_SHORT).show()\n}")
    add("python_matmul", "def forward(self, x):\n    h = x@self.weight.T + self.bias\n    return torch.relu(h@self.proj.weight)\n")
    add("logins", "$ ssh ec2-user@ec2-3-92-14-101.compute-1.amazonaws.com\n[ec2-user@ip-10-0-1-5 ~]$ sudo -i\nroot@web-01:~# systemctl restart nginx\n$ scp build.tar.gz ubuntu@staging.acme.example:/opt/app/\nLast login: Tue May 14 09:12:44 2024")
    add("sklearn_css", "#sk-container-id-2 label.sk-toggleable__label-arrow:before {content: \"▸\";float: left;margin-right: 0.25em;}\n#sk-container-id-2 div.sk-toggleable__content {max-height: 0;max-width: 0;overflow: hidden;}")
    add("news_slug", "https://www.reuters.com/technology/sk-hynix-shares-hit-record-high-ai-chip-demand-2024-05-14/\nSK-Hynix-Q1-earnings-beat-estimates")
    add("pem_parser_py", 'def load_key(text: str) -> bytes:\n    if "-----BEGIN RSA PRIVATE KEY-----" not in text:\n        raise ValueError("not a PKCS#1 key")\n    body = text.split("-----BEGIN RSA PRIVATE KEY-----")[1].split("-----END RSA PRIVATE KEY-----")[0]\n    return base64.b64decode("".join(body.split()))\n')
    add("pem_parser_go", 'const (\n\tpemHeader = "-----BEGIN PRIVATE KEY-----"\n\tpemFooter = "-----END PRIVATE KEY-----"\n)\n\nfunc isKey(b []byte) bool {\n\treturn bytes.HasPrefix(b, []byte(pemHeader)) && bytes.Contains(b, []byte(pemFooter))\n}\n')
    add("pem_builder_js", 'const pem = "-----BEGIN PRIVATE KEY-----\\n" + b64.match(/.{1,64}/g).join("\\n") + "\\n-----END PRIVATE KEY-----\\n";')
    add("certificate", "-----BEGIN CERTIFICATE-----\n" + "\n".join(b64(48)[:64] for _ in range(10)) + "\n-----END CERTIFICATE-----")
    add("ssh_public_key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rs(43, B64) + " deploy@build-01")
    # code that names secrets without holding them
    add("code_refs", 'password = os.environ["DB_PASSWORD"]\napi_key = os.getenv("OPENAI_API_KEY")\ntoken = request.headers.get("Authorization")\nsecret_key = settings.SECRET_KEY\n')
    add("code_refs", "const apiKey = process.env.OPENAI_API_KEY!;\nconst token: string = await getToken();\nexport interface Config { password: string; apiKey?: string }\n")
    add("code_refs", "class Settings(BaseSettings):\n    api_key: SecretStr\n    db_password: str = Field(..., alias=\"DB_PASSWORD\")\n    token: Optional[str] = None\n")
    add("ci_refs", "env:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  password: ${DB_PASSWORD}\n")
    add("k8s_refs", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: app-credentials\n        key: password\n")
    add("openapi", "components:\n  schemas:\n    Login:\n      properties:\n        password:\n          type: string\n          format: password\n        token: {type: string}\n")
    add("loopback", "Listening on http://127.0.0.1:8080 and http://localhost:3000\nredis://localhost:6379/0\npostgres://localhost/dev")
    add("public_ip", "Resolved api.acme.example to 203.0.113.9 and 8.8.8.8; route 0.0.0.0/0 via 100.64.0.1")
    add("prose_tokens", "The tokenizer splits text into tokens; max_tokens caps the output. Risk-assessment-frameworks and task-scheduling-policies are out of scope.")
    add("css_hash_ids", ".css-1dbjc4n{display:flex} .sc-bdfBwQ.kXWHhB{margin:0} ._3Jk9v0Fq7aZ{color:red}")
    add("long_words", "Pneumonoultramicroscopicsilicovolcanoconiosis is a word; Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch is a place.")
    # recorded provider traffic: ids, signatures, encrypted content, base64 media
    if not FIXTURES.is_dir():
        sys.exit(f"recorded fixtures not found at {FIXTURES} (set DISGUISE_FIXTURES)")
    for f in sorted(FIXTURES.rglob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            continue
        for path, s in _strings(doc):
            key = path[-1] if path else ""
            if key in ("signature", "encrypted_content", "data") and len(s) > 40:
                cat = {"signature": "thinking_signature", "encrypted_content": "encrypted_content", "data": "base64_data"}[key]
                place = {"signature": "anthropic_thinking_signature", "encrypted_content": "responses_encrypted_content"}.get(key, "anthropic_image_data")
                add(cat, s[:6000] if place == "anthropic_image_data" else s, f"{f.parent.name}/{f.name}", place=place)
            elif key in ("id", "tool_use_id", "call_id") and isinstance(s, str) and len(s) > 12:
                add("provider_id", s, f"{f.parent.name}/{f.name}")
            elif key == "url" and s.startswith("data:"):
                add("base64_data", s, f"{f.parent.name}/{f.name}", place="openai_image_url")
    for f in sorted(FIXTURES.rglob("*.sse")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.startswith("data:") or "signature" not in line and "encrypted_content" not in line:
                continue
            try:
                ev = json.loads(line[5:])
            except ValueError:
                continue
            for path, s in _strings(ev):
                if path and path[-1] in ("signature", "encrypted_content") and len(s) > 40:
                    cat = "thinking_signature" if path[-1] == "signature" else "encrypted_content"
                    add(cat, s, f"{f.parent.name}/{f.name}", place="anthropic_thinking_signature" if cat == "thinking_signature" else "responses_encrypted_content")
    more_negatives(add)
    # placeholders: may be masked or not (breaks=False)
    for t in ("OPENAI_API_KEY=sk-...", "ANTHROPIC_API_KEY=YOUR_API_KEY", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
              "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "export OPENAI_API_KEY=\"sk-proj-...\"", "email: user@example.com",
              "password: <your-password>", "card: 4111 1111 1111 1111", "Authorization: Bearer <token>", "api_key: YOUR_API_KEY_HERE",
              "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "postgres://user:password@localhost:5432/db", "sk-ant-api03-...",
              "STRIPE_SECRET_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc", "IBAN: DE89 3704 0044 0532 0130 00", "+1 555 0100"):
        add("placeholder", t, "documentation example", breaks=False)
    return recs


def more_negatives(add) -> None:
    """Two false examples per kind added by issue 17: what talks about a format without
    holding one (its prefix in code, a token cut short in the docs), the same shape under
    a name that is not a secret's, references in the new assignment forms, and personal
    data that cannot exist."""
    g = formats.Gen(random.Random(23))

    def kadd(kind: str, text: str, note: str) -> None:
        add(f"false_{kind}", text, note)

    for kind, (gen, _k, prefix) in formats.FORMATS.items():
        v = gen(g)
        if prefix is not None:
            kadd(kind, f'TOKEN_PREFIXES = ("{prefix}",)  # how {kind} values begin\nif value.startswith(TOKEN_PREFIXES):\n    raise LeakError(value[:4])\n',
                 "the prefix alone, in code")
        cut = v[: (len(prefix) if prefix else 2) + 6]
        kadd(kind, f"Tokens look like `{cut}…` (truncated in the docs).", "a token cut short")
    for kind, (gen, _k) in formats.KEYED.items():
        v = gen(g)
        kadd(kind, f'commit: {g.s(40, formats.HEX)}\nrequest_id = "{g.uuid()}"\n', "ids and digests under names that are not secrets'")
        kadd(kind, f'"checksum": "{g.s(len(v) if len(v) < 64 else 64, formats.HEX)}", "etag": "{g.s(32, formats.HEX)}"', "hashes in JSON")
    extra = {
        "okta_token": ("digest 00" + g.s(40, formats.HEX), "hash 00" + g.s(40, "0123456789")),
        "zapier_webhook": ("see https://hooks.zapier.com/hooks/catch/ for the format", "https://zapier.com/apps/webhook/integrations"),
        "airtable_pat": ("patient.record_identifier_v2.save()", "pat" + g.s(14) + "." + g.s(20, formats.HEX)),
        "bundler_credentials": ("BUNDLE_PATH=vendor/bundle\nBUNDLE_JOBS=4", "BUNDLE_GEMS__CONTRIBSYS__COM: ${SIDEKIQ_CREDENTIALS}"),
        "vault_legacy_token": ("return s.replaceAllOccurrencesOfTheWord(x)", "this.s.substringBetweenMarkers"),
        "mailchimp_key": (g.s(32, formats.HEX) + "-user", "md5 " + g.s(32, formats.HEX)),
        "twitter_bearer_token": ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", "data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAAAAAA+/" + g.b64(30)),
        "facebook_app_token": ("order 123456789012345 | shipped", "ts 1715677964123456|short"),
        "assign_go_var": ('var apiToken string = os.Getenv("API_TOKEN")', 'var apiToken string = ""'),
        "assign_kotlin_typed": ("val clientSecret: String = BuildConfig.CLIENT_SECRET", 'val clientSecret: String? = null'),
        "assign_make_conditional": ("DEPLOY_TOKEN ?= $(shell cat .token)", "DEPLOY_TOKEN ?= $(DEPLOY_TOKEN_FILE)"),
        "assign_make_shell": ("REGISTRY_TOKEN ::= $(REGISTRY_TOKEN_DEFAULT)", 'REGISTRY_TOKEN ::= ""'),
        "assign_make_evaluated": ("API_SECRET :::= ${VAULT_SECRET}", "API_SECRET :::= $(call read_secret,api)"),
        "assign_php_concat": ("$authToken .= $suffix;", "$authToken .= getenv('AUTH_TOKEN');"),
        "assign_java_set_property": ('System.setProperty("PAYMENTS_API_KEY", apiKey);', 'System.setProperty("PAYMENTS_API_KEY", System.getenv("PAYMENTS_API_KEY"));'),
        "assign_call_arguments": ('os.environ.setdefault("SERVICE_TOKEN", "")', 'config.get("service_token", "not-set")'),
        "assign_xml_element": ("<apiToken>\n    ${API_TOKEN}\n</apiToken>", "<apiToken>\n    <value>secretRef</value>\n</apiToken>"),
        "assign_xml_inline": ("<clientSecret>${CLIENT_SECRET}</clientSecret>", "<clientSecret></clientSecret>"),
        "assign_xml_attribute": ('<add key="ClearTextPassword" value="%NUGET_PASSWORD%" />', '<add key="ClearTextPassword" value="" />'),
        "assign_camel_infix": ("mySecretString = getString(R.string.secret)", "tokenizer = AutoTokenizer.from_pretrained('gpt2-tokenizer-v2')"),
        "assign_logstash": ('  "apiToken" => "${API_TOKEN}"', '  "apiToken" => "%{[@metadata][token]}"'),
        "credential_pair": ("curl -u <user:password> https://test.com/endpoint", 'curl -sL --user "$1:$2" "$3" > "$4"'),
        "k8s_secret_data": ("apiVersion: v1\nkind: ConfigMap\ndata:\n  mode: production\n  image: postgres\n",
                            "kind: ExternalSecret\nspec:\n  data:\n    - secretKey: api-key\n      remoteRef:\n        key: prod/api\n"),
        "us_ssn": ("invalid: 666-12-3456 and 900-45-6789", "example card 078-05-1120; part 123-00-4567"),
        "us_ssn_unformatted": ("order 123456789 shipped", "SSN field: 000000000"),
        "ipv6_unique_local": ("2001:db8::1 and ::1 are not private", "hash fd00c0ffee1234 and color #fd00ff"),
        "ipv6_link_local": ("mac fe:80:00:12:34:56", "feature fe80-series chip"),
        "email_nonascii": ("ユーザー@例", "résumé@2x.png"),
        "phone_us": ("order 415-555-2671 shipped", "build 1-212-555-0147 passed"),
        "cookie_phpsessid": ("Set-Cookie: PHPSESSID=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT", "session_name('PHPSESSID');"),
        "cookie_jsessionid": ("<session-config><cookie-config><name>JSESSIONID</name></cookie-config></session-config>", "url;jsessionid="),
        "cookie_connect_sid": ("app.use(session({ name: 'connect.sid' }))", "res.clearCookie('connect.sid')"),
        "cookie_django_sessionid": ('SESSION_COOKIE_NAME = "sessionid"', "sessionid=None"),
        "cookie_rails_session": ("key: '_shop_session'", "Rails.application.config.session_store :cookie_store, key: '_shop_session'"),
        "cookie_laravel_session": ("'cookie' => env('SESSION_COOKIE', 'laravel_session'),", "laravel_session=; expires=0"),
    }
    for kind, texts in extra.items():
        for t in texts:
            kadd(kind, t, "a false example of its kind")


def _strings(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _strings(v, path + (k,))
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v, path)
    elif isinstance(doc, str):
        yield path, doc


def main() -> None:
    pos, neg = positives(), negatives()
    seen = set()
    neg = [n for n in neg if not (n["text"] in seen or seen.add(n["text"]))]
    for name, recs in (("positives.jsonl", pos), ("negatives.jsonl", neg)):
        with open(HERE / name, "w", encoding="utf-8") as fh:
            for r in recs:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(pos)} positives of {len({p['kind'] for p in pos})} kinds, {len(neg)} negatives", file=sys.stderr)


if __name__ == "__main__":
    main()
