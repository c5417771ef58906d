"""What each page shows, described outside Streamlit (after bertviz: a view takes data, it does
not run models or draw widgets).

One module per page (pages/NAME.py is described by views/NAME.py). Its functions take a Trace
(or the numbers a page computes from one) and the page's choices (layer, head, tab, step...)
as plain values and return what the page shows: blocks (views.blocks: Heading, Markdown, Tex,
Code, Table, Metric, Numbers) and plotly Figures, in the order shown. Figures come from
attnviz.plotting, numbers from attnviz.analysis, text through attnviz.i18n.

Three renderers take the same blocks:

    ui.render(blocks, where=column)        a Streamlit page (pages/*.py): the page keeps its
                                           widgets, tabs and columns and draws each part;
                                           the blocks it renders are the page's view
    export.html.page_html(view)            "Download this view (HTML)": the blocks the page
                                           rendered, as one file (ui.recorder)
    export.write_site(out, views)          the lesson pack (attnviz.export.site): each
                                           module's `page(...)` is the page as it opens

No Streamlit here.
"""
