"""The back office in a real headless Chromium (Debian's, driven through Debian's
chromedriver by Selenium): sign in, find a customer, adjust the balance, sign out; a chart and
its table as the reports API answers; a key issued and used; a dead letter sent again; and
every page checked with axe-core, with no serious or critical violation. The profile's screenshot is
kept in test-artifacts/."""
from __future__ import annotations

import shutil
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from app.database.engine import utcnow
from app.services.reports.periods import moscow_day
from app.web.languages import money
from app.wire import parse_amount
from tests.api.test_customers import credit, enrol
from tests.browser.test_card_page_chromium import ARTIFACTS, serve, stop
from tests.conftest import without
from tests.portal.helpers import HOOK_HOST, PASSWORD, add_staff, dead_letter

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
AXE = Path(sys.prefix) / "node" / "node_modules" / "axe-core" / "axe.min.js"

pytestmark = pytest.mark.slow


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        without("Debian's chromium and its chromedriver are not installed (.ci/run installs them)")
    if not AXE.exists():
        without("axe-core is not installed (make install runs npm ci in tests/node)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-extensions",
                     "--window-size=1024,1366",  # a tablet held upright
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"intl.accept_languages": "ru-RU,ru"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def served(app):
    server, thread = serve(app)
    yield f"http://127.0.0.1:{server.server_port}"
    stop(server, thread)


def serious_violations(driver) -> list[str]:
    """axe-core's serious and critical violations on the page shown, one line each."""
    driver.execute_script(AXE.read_text())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then(r => done(r.violations)).catch(e => done([{id: 'axe failed: ' + e,"
        " impact: 'critical', nodes: []}]));")
    return [f"{v['id']} ({v['impact']}): {[n.get('target') for n in v['nodes']][:3]}"
            for v in result if v["impact"] in ("serious", "critical")]


def figures(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, ".figures").text.replace("\xa0", " ")


def field(driver, name):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.NAME, name)


def click(driver, selector):
    """Click a link or a form's button, and wait until the page it leads to has replaced this
    one (a click may return before the navigation ends)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    page = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, selector).click()

    def replaced(_driver) -> bool:
        # Mid-navigation Chromium may answer for the old node with an inspector error rather
        # than a stale element: either way the page is gone.
        try:
            page.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(driver, 60).until(replaced)


def test_sign_in_find_adjust_sign_out_with_no_serious_violation(browser, served, app, client,
                                                                tenant):
    from selenium.webdriver.common.by import By

    add_staff(app, tenant.company_id, "owner@example.com", "owner", name="Olga Owner")
    customer = enrol(client, tenant, phone="+79123456789", first_name="Зинаида",
                     lastName="Петрова")
    credit(client, tenant, customer["id"], "1234.56")
    checked: dict[str, list[str]] = {}

    def check(name):
        checked[name] = serious_violations(browser)

    link = app.test_cli_runner().invoke(args=[
        "staff", "add", "desk@example.com", "--company", tenant.company_id, "--role", "support",
        "--name", "Desk"]).output.strip().splitlines()[-1]
    browser.get(served + link[link.index("/portal/welcome/"):])
    assert "desk@example.com" in browser.page_source
    check("welcome")

    browser.get(f"{served}/portal/customers")
    assert browser.current_url.startswith(f"{served}/portal/login?next=")
    check("sign in")
    field(browser, "email").send_keys("owner@example.com")
    field(browser, "password").send_keys(PASSWORD)
    click(browser, "form.form button[type=submit]")
    assert browser.current_url == f"{served}/portal/customers"
    check("customers")

    field(browser, "q").send_keys("8 912 345-67-89")
    click(browser, "form.search button[type=submit]")
    check("search results")
    click(browser, f"a[href='/portal/customers/{customer['id']}']")
    assert browser.current_url == f"{served}/portal/customers/{customer['id']}"
    assert "1 234,56 ₽" in figures(browser)  # Russian, as the browser asks
    check("profile")

    field(browser, "amount").send_keys("-34,56")
    field(browser, "basis").send_keys("complaint #7")
    click(browser, "#adjust + form button[type=submit], form[action$='/adjustments'] button")
    assert browser.current_url == f"{served}/portal/customers/{customer['id']}"
    assert "1 200,00 ₽" in figures(browser)
    assert "Olga Owner" in browser.find_element(By.CSS_SELECTOR, "main").text
    check("profile after the adjustment")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "portal-profile.png"))

    dead_letter(app, tenant.company_id)  # the webhooks page with each of its tables
    period = "from=2026-11-01&to=2026-11-29"
    for name, path in (("dashboard", "/portal/"), ("webhooks", "/portal/webhooks"), ("staff", "/portal/staff"),
                       ("audit", "/portal/audit"), ("not found", "/portal/customers/nobody"),
                       ("liability", "/portal/reports/liability"),
                       ("program", "/portal/program"),
                       ("locations", "/portal/locations"), ("keys", "/portal/keys"),
                       ("ledger", f"/portal/reports/ledger?{period}&groupBy=month"),
                       ("registers", f"/portal/reports/registers?{period}"),
                       ("program's figures", f"/portal/reports/program?{period}"),
                       ("a wrong period", "/portal/reports/program?from=2026-11-29&to=2026")):
        browser.get(served + path)
        check(name)
    click(browser, "button[value=en]")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    check("in English")

    click(browser, "form[action$='/logout'] button")
    assert browser.current_url == f"{served}/portal/login"
    browser.get(f"{served}/portal/customers/{customer['id']}")
    assert browser.current_url.startswith(f"{served}/portal/login")
    assert {name: found for name, found in checked.items() if found} == {}


def test_a_chart_and_its_table_show_the_reports_api(browser, served, app, client, tenant):
    from selenium.webdriver.common.by import By

    add_staff(app, tenant.company_id, "books@example.com", "accountant", name="Anna Books")
    customer = enrol(client, tenant, phone="+79123456780", first_name="Vera")
    credit(client, tenant, customer["id"], "1234.56")
    # Points that expire in two months' time, so one month's bar stands above the others.
    later = (utcnow() + timedelta(days=62)).isoformat()
    assert client.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                       json={"amount": "300.00", "basis": "promo", "expiresAt": later},
                       headers=tenant.headers(Idempotency_Key="expiring")).status_code == 201
    browser.get(f"{served}/portal/login")
    field(browser, "email").send_keys("books@example.com")
    field(browser, "password").send_keys(PASSWORD)
    click(browser, "form.form button[type=submit]")
    browser.get(f"{served}/portal/?from=2026-01-01&to={moscow_day(utcnow()).isoformat()}")
    assert serious_violations(browser) == []

    owed = client.get("/v1/reports/liability", headers=tenant.headers()).get_json()
    rows = browser.find_elements(By.CSS_SELECTOR, "#expiring-table tbody tr")
    with app.test_request_context(headers={"Accept-Language": "ru"}):
        expected = [[month["month"], money(parse_amount(month["amount"]))]
                    for month in owed["expiring"]] + [
            ["Никогда или позже", money(parse_amount(owed["neverExpires"]))]]
    assert [[cell.text.replace("\xa0", " ") for cell in row.find_elements(By.CSS_SELECTOR,
                                                                          "th, td")]
            for row in rows] == [[text.replace("\xa0", " ") for text in row] for row in expected]
    bars = browser.find_elements(By.CSS_SELECTOR, "svg[aria-labelledby=expiring] rect")
    assert len(bars) == 12
    # The tallest bar is the largest month's, the others by their figures.
    heights = [float(bar.get_attribute("height")) for bar in bars]
    amounts = [parse_amount(month["amount"]) for month in owed["expiring"]]
    assert max(amounts) == parse_amount("300.00")
    assert [height == max(heights) for height in heights] == [
        amount == max(amounts) for amount in amounts]


def test_a_key_issued_in_the_browser_is_used(browser, served, app, client, tenant):
    from selenium.webdriver.common.by import By

    add_staff(app, tenant.company_id, "boss@example.com", "owner", name="Boss")
    browser.get(f"{served}/portal/login")
    field(browser, "email").send_keys("boss@example.com")
    field(browser, "password").send_keys(PASSWORD)
    click(browser, "form.form button[type=submit]")
    browser.get(f"{served}/portal/keys")
    field(browser, "name").send_keys("Till sync")
    browser.find_element(By.CSS_SELECTOR, "input[name=scopes][value='program:read']").click()
    click(browser, "form[action$='/portal/keys'] button[type=submit]")
    key = browser.find_element(By.ID, "new-key").text
    assert serious_violations(browser) == []
    used = client.get("/v1/program", headers={"Authorization": f"Bearer {key}"})
    assert used.status_code == 200
    refused = client.get("/v1/customers", headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 403  # the scopes ticked, no more


def test_a_dead_letter_sent_again_in_the_browser(browser, served, app, db, tenant):
    from selenium.webdriver.common.by import By
    from sqlalchemy import select

    from app.models import WebhookDelivery

    add_staff(app, tenant.company_id, "mia@example.com", "manager", name="Mia Manager")
    event_id, delivery_id = dead_letter(app, tenant.company_id)
    browser.get(f"{served}/portal/login")
    field(browser, "email").send_keys("mia@example.com")
    field(browser, "password").send_keys(PASSWORD)
    click(browser, "form.form button[type=submit]")
    browser.get(f"{served}/portal/webhooks")
    assert event_id in browser.find_element(By.ID, "dead-letters").text
    assert serious_violations(browser) == []

    click(browser, f"form[action$='/events/{event_id}/replay'] button")
    assert browser.current_url == f"{served}/portal/webhooks"
    assert browser.find_elements(By.ID, "dead-letters") == []
    state = browser.find_element(By.CSS_SELECTOR, "#deliveries tbody tr td:nth-of-type(3)")
    assert state.text == "ждёт отправки"  # pending again, in Russian as the browser asks
    assert serious_violations(browser) == []
    db.expire_all()
    row = db.scalar(select(WebhookDelivery).where(WebhookDelivery.id == delivery_id))
    assert (row.state, row.attempts, row.last_error) == ("PENDING", 0, None)

    field(browser, "url").send_keys(f"https://{HOOK_HOST}/crm")
    click(browser, "form[action$='/portal/webhooks'] button[type=submit]")
    assert browser.find_element(By.ID, "new-secret").text.startswith("whsec_")
    assert serious_violations(browser) == []
