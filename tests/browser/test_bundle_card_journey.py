"""The dataset bundle's card filled in on the study's page by keyboard, at desktop width and at 360 px: a
license the Hub would refuse is refused naming the field, a good one ends in the bundle's README.md; the
finished bundle is pushed to a dataset repository (the Hub's stand-in) from its job page, by keyboard."""

import zipfile

import pytest
import yaml
from playwright.sync_api import expect

from tests.browser.conftest import HUB_TOKEN, no_sideways_scroll, save_screenshot, too_wide

pytestmark = pytest.mark.browser
SLUG = "demo-nli"


def fill_card_by_keyboard(page, license: str, description: str) -> None:
    page.locator("#bundle-license").focus()
    page.keyboard.type(license)
    page.keyboard.press("Tab")  # the name: the study's title by default
    page.keyboard.press("Tab")
    page.keyboard.type(description)
    for _ in range(2):  # the citation, then the languages
        page.keyboard.press("Tab")
    page.keyboard.type("en")
    expect(page.locator("#bundle-language")).to_be_focused()


def submit_bundle(page) -> None:
    page.locator("#bundle-card").get_by_role("button", name="Prepare the bundle").focus()
    page.keyboard.press("Enter")


def push_by_keyboard(page, repo: str, token: str) -> None:
    page.locator("#hub-repo").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(repo)
    page.keyboard.press("Tab")
    page.keyboard.type(token)
    page.keyboard.press("Tab")  # the public checkbox: left unticked
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Push to the Hub")).to_be_focused()
    page.keyboard.press("Enter")


def test_the_bundle_card_by_keyboard_at_desktop_and_360_px(sign_in, demo_server, hub, tmp_path):
    base = demo_server["url"]
    for width, license, written in ((1200, "CC-BY-4.0", "cc-by-4.0"), (360, "MIT-0", "other")):
        author = sign_in("author", width=width, height=800)
        author.goto(f"{base}/projects/{SLUG}/")
        assert no_sideways_scroll(author), (width, too_wide(author))
        expect(author.locator("#bundle-card")).to_contain_text("load_dataset(")
        if width == 1200:
            fill_card_by_keyboard(author, "free for all", "Demo labels.")
            submit_bundle(author)
            author.wait_for_url(f"{base}/projects/{SLUG}/")
            expect(author.get_by_text("Not exported: license: 'free for all' is neither")).to_be_visible()
        fill_card_by_keyboard(author, license, f"Demo labels at {width} px.")
        save_screenshot(author, f"journey-bundle-card-{width}")
        submit_bundle(author)
        author.wait_for_url("**/jobs/*/")
        expect(author.locator("#job-state")).to_have_text("Done", timeout=120000)
        with author.expect_download() as download:
            author.get_by_role("link", name="Download the output").click()
        bundle = tmp_path / f"{width}.zip"
        download.value.save_as(bundle)
        with zipfile.ZipFile(bundle) as archive:
            card = archive.read("README.md").decode()
            assert "croissant.json" in archive.namelist()
        meta = yaml.safe_load(card.split("---\n")[1])
        assert (meta["license"], meta["language"]) == (written, ["en"])
        assert f"Demo labels at {width} px." in card
        job_page = author.url
        assert no_sideways_scroll(author), (width, too_wide(author))
        # A name the Hub refuses is refused naming the field, before anything is sent; then the push.
        push_by_keyboard(author, "demo-nli", HUB_TOKEN)
        expect(author.get_by_text("Not pushed: repo: give the dataset repository as owner/name")).to_be_visible()
        assert hub.calls == []
        repo = f"my-lab/demo-nli-{width}"
        push_by_keyboard(author, repo, HUB_TOKEN)
        expect(author.get_by_text(f"Pushed to {repo}:")).to_be_visible()
        assert no_sideways_scroll(author), (width, too_wide(author))
        assert author.url == job_page and author.locator("#hub-token").input_value() == ""
        with zipfile.ZipFile(bundle) as archive:
            assert hub.repos[repo].files == {name: archive.read(name) for name in archive.namelist()}
        assert hub.repos[repo].private
        save_screenshot(author, f"journey-hub-push-{width}")
        hub.calls.clear()
        author.close()
