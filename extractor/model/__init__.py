# Model: the values a scan makes (slotted dataclasses, no pydantic), the published records and manifests
# (pydantic), and the JSON Schemas generated from them.
