from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """mapping[key] in templates; None when absent."""
    return (mapping or {}).get(key)
