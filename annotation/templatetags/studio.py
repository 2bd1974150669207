import markdown as markdown_library
import nh3
from django import template
from django.utils.safestring import mark_safe

from annotation.services import extensions

register = template.Library()

# What instructions may use once rendered: text formatting, lists, links, tables; no scripts, styles,
# frames, forms or event attributes (nh3 drops everything else).
MARKDOWN_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h2",
    "h3",
    "h4",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "kbd",
}


@register.filter
def get_item(mapping, key):
    """mapping[key] in templates; None when absent."""
    return (mapping or {}).get(key)


@register.filter
def shown_in(value, project) -> str:
    """A stored value (a label, an aggregate, a gold reference) as the project's task type shows it to people:
    `{{ item.final_value|shown_in:project }}` (an explained-labels aggregate is a count per label, not a dict)."""
    return project.task.display(value, project.options)


@register.filter
def markdown(text: str) -> str:
    """An author's Markdown as sanitised HTML (safe to show to workers)."""
    html = markdown_library.markdown(text or "", extensions=["tables", "sane_lists"])
    return mark_safe(nh3.clean(html, tags=MARKDOWN_TAGS, link_rel="noopener noreferrer nofollow"))


@register.simple_tag(takes_context=True)
def panels(context, place):
    """The panels features add at this place of the page (annotation.services.extensions.add_panel), each
    rendered with the page's context and the variables its context function gives."""
    rendered = []
    for panel in extensions.PANELS[place]:
        extra = panel.context(context)
        if extra is not None:
            with context.push(**extra):
                rendered.append(context.template.engine.get_template(panel.template).render(context))
    return mark_safe("".join(rendered))  # templates the apps ship, autoescaped as they render
