"""Pure figure functions: data in, a matplotlib `Figure` out (object API, never pyplot), and `to_png`.

No function here keeps state or touches global matplotlib settings, so figures can be drawn from any thread
(notebook widgets, the report builder). Every figure takes a `footer`: which GPU, dtype, versions and timing
method produced the numbers, printed under the plot so a PNG that travels alone still says where it came from.

Modules: base (footer, style, PNG), intervention_stats (the trace report's figures), campaign (one campaign's and the
kernel ladder's), evolution (an evolution run's).
"""
from workbench.plots.base import FONT_SIZE, FOOTER_SIZE, tick_summary, to_png
from workbench.plots.campaign import (METHOD_COLORS, METHOD_LABELS, TRIGGER_COLORS, campaign_progress,
                                      ceiling_fraction, ladder_geomeans, scenario_tflops)
from workbench.plots.evolution import LAYER_COLORS, evolution_best_so_far, evolution_lineage
from workbench.plots.intervention_stats import (CLASS_COLORS, best_so_far, gain_attribution, message_classes,
                                    readded_over_time)

__all__ = ["CLASS_COLORS", "FONT_SIZE", "FOOTER_SIZE", "LAYER_COLORS", "METHOD_COLORS", "METHOD_LABELS",
           "TRIGGER_COLORS", "best_so_far", "campaign_progress", "ceiling_fraction", "evolution_best_so_far",
           "evolution_lineage", "gain_attribution", "ladder_geomeans", "message_classes", "readded_over_time",
           "scenario_tflops", "tick_summary", "to_png"]
